//! Styles through the API: the built-in ones and the caller's house styles listed, a house
//! style added with its files (`POST /api/v1/styles`, multipart), read back and removed. A
//! style is checked whole before anything of it is kept (`style::house::read`), and a refusal
//! names the file, the key and its line.

use actix_multipart::Multipart;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, delete, get, post, web};
use bytes::Bytes;
use futures_util::StreamExt;
use serde::Serialize;
use utoipa::ToSchema;

use crate::house_styles::{self, AddError, Kept, Owner};
use crate::style::house::{self, Kind, MAX_FILES, MAX_FONT_BYTES, MAX_SOURCE_BYTES};
use crate::style::{StyleName, builtin};
use crate::web::AppState;
use crate::web::api::books::check_write;
use crate::web::api::upload::malformed;
use crate::web::caller::Caller;
use crate::web::error::{ApiError, ErrorBody};
use crate::web::error_responses::{
    BadRequest, CsrfFailed, Internal, NotFound, RateLimited, Unauthorized, Unavailable,
};
use crate::web::query::Query;

/// A style, as listed.
#[derive(Debug, Serialize, ToSchema)]
pub struct StyleView {
    /// What a book names it by (`style` in its metadata).
    pub name: String,
    pub title: String,
    pub description: String,
    /// `built-in`, or `house` for one uploaded.
    pub kind: &'static str,
    /// For a house style: `tenant` (the caller's own books) or `installation` (every
    /// tenant's, added by an admin).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<&'static str>,
    /// Its fonts and ornament images.
    pub files: Vec<StyleFileView>,
    /// A house style's version: a digest of its file and files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// When a house style was last added or replaced (unix milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<i64>,
    /// The style file as written (in a single style's answer): a house style starts from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StyleFileView {
    pub name: String,
    /// `font` or `image`.
    pub kind: &'static str,
    pub bytes: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StyleList {
    /// The built-in styles in the picker's order, then the house styles by name.
    pub styles: Vec<StyleView>,
}

fn built_in(name: &StyleName, with_source: bool) -> Option<StyleView> {
    let style = builtin::get(name.as_str())?;
    Some(StyleView {
        name: name.to_string(),
        title: style.title,
        description: style.description,
        kind: "built-in",
        scope: None,
        files: Vec::new(),
        version: None,
        updated_at: None,
        source: with_source
            .then(|| builtin::source(name.as_str()).map(str::to_owned))
            .flatten(),
    })
}

fn house_view(kept: &Kept, with_source: bool) -> StyleView {
    let style = kept.style();
    StyleView {
        name: kept.name.to_string(),
        title: style
            .as_ref()
            .map_or_else(|| kept.title.clone(), |s| s.title.clone()),
        description: style.map(|s| s.description).unwrap_or_default(),
        kind: "house",
        scope: Some(match kept.owner {
            Owner::Tenant(_) => "tenant",
            Owner::Everyone => "installation",
        }),
        files: kept
            .files
            .iter()
            .map(|f| StyleFileView {
                name: f.name.clone(),
                kind: match f.kind {
                    Kind::Font => "font",
                    Kind::Image => "image",
                },
                bytes: f.bytes,
            })
            .collect(),
        version: Some(kept.version()),
        updated_at: Some(kept.updated_at),
        source: with_source.then(|| kept.source.clone()),
    }
}

/// List styles
///
/// The styles the caller's books may use: the built-in ones, its own house styles and those an
/// admin added for every tenant.
#[utoipa::path(
    operation_id = "list_styles",
    tag = "styles",
    responses(
        (status = 200, description = "The styles.", body = StyleList),
        (status = 401, response = Unauthorized),
        (status = 429, response = RateLimited),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/styles")]
pub async fn list(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let mut styles: Vec<StyleView> = builtin::names()
        .filter_map(|name| built_in(&name, false))
        .collect();
    for kept in house_styles::visible(&state.db, &caller.tenant()).await? {
        styles.push(house_view(&kept, false));
    }
    Ok(HttpResponse::Ok().json(StyleList { styles }))
}

/// Show a style
///
/// One style, with its file as written: start a house style from a built-in one's.
#[utoipa::path(
    operation_id = "show_style",
    tag = "styles",
    params(("name" = String, Path, description = "The style's name.")),
    responses(
        (status = 200, description = "The style.", body = StyleView),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 429, response = RateLimited),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/styles/{name}")]
pub async fn show(
    state: web::Data<AppState>,
    caller: Caller,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let not_found = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "style_not_found",
            format!("There is no style called {:?} here.", name.as_str()),
        )
    };
    let name = StyleName::parse(&name).map_err(|_| not_found())?;
    if let Some(view) = built_in(&name, true) {
        return Ok(HttpResponse::Ok().json(view));
    }
    let kept = house_styles::find(&state.db, &caller.tenant(), &name)
        .await?
        .ok_or_else(not_found)?;
    Ok(HttpResponse::Ok().json(house_view(&kept, true)))
}

/// The form that adds a house style (never built: `add` reads the stream itself).
#[derive(ToSchema)]
#[allow(dead_code)]
struct StyleForm {
    /// The style file (TOML; see the README's "Book styles" for every key). At most 64 KB.
    #[schema(value_type = String, content_media_type = "application/toml")]
    style: Vec<u8>,
    /// Its font files (`.ttf`, `.otf`; each family's regular face at least, whose licence
    /// allows embedding) and ornament image (`.svg` without text, or `.png`, at most 1200
    /// pixels a side): one part per file, each named as the style names it. At most 12 files,
    /// 4 MB a font.
    #[schema(value_type = Vec<String>, required = false)]
    files: Vec<Vec<u8>>,
    /// The style's name (what books name it by); by default the style file's name without
    /// `.toml`. Lowercase letters, digits and single hyphens; not a built-in style's.
    #[schema(pattern = "^[a-z0-9]+(-[a-z0-9]+)*$", required = false)]
    name: String,
    /// `true` to replace a house style of that name. Books already made keep their look
    /// until they are given the style again.
    #[schema(required = false)]
    replace: bool,
    /// `tenant` (the default): for the caller's own books; `installation`: for every
    /// tenant's (admins only).
    #[schema(pattern = "^(tenant|installation)$", required = false)]
    scope: String,
}

/// Everything a style's upload may hold: the style, its files, the form's small fields.
const MAX_BODY_BYTES: usize = MAX_SOURCE_BYTES + 16 * 1024 * 1024;

/// Add a house style
///
/// A style file and the fonts and ornament image it names, checked whole before anything is
/// kept: a key the format does not have, a value out of range, a font or image that is not
/// there, a face whose licence forbids embedding, an ornament that holds text, a colour
/// under 4.5:1 contrast: each is refused (422, `invalid_style`) naming the file, the key and
/// its `line`, and what is allowed. The style is then in the caller's pickers, its previews
/// and `style=` for its books.
#[utoipa::path(
    operation_id = "add_style",
    tag = "styles",
    request_body(content = inline(StyleForm), content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "The style is kept.", body = StyleView),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, description = "`scope=installation` from a caller who is not an admin.",
            body = ErrorBody),
        (status = 409, description = "A house style of that name exists (`style_exists`): send \
            `replace=true`.", body = ErrorBody),
        (status = 413, description = "The upload is larger than a style's files may be \
            (`too_large`).", body = ErrorBody),
        (status = 422, description = "The style cannot be used (`invalid_style`); the message \
            says why and what to do, `field` names the form part and `line` the style file's \
            line.", body = ErrorBody),
        (status = 429, response = RateLimited),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[post("/styles")]
pub async fn add(
    state: web::Data<AppState>,
    caller: Caller,
    form: Multipart,
) -> Result<HttpResponse, ApiError> {
    let tenant = caller.tenant();
    check_write(&state, &tenant)?;
    let form = read_form(form).await?;
    let owner = match form.scope.as_deref() {
        None | Some("tenant") => Owner::Tenant(tenant.clone()),
        Some("installation") if caller.0.admin => Owner::Everyone,
        Some("installation") => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                "Only an admin adds a style for every tenant: leave out scope, and the style \
                 is for your own books.",
            )
            .field("scope"));
        }
        Some(other) => {
            return Err(ApiError::bad_request(
                "invalid_field",
                format!("scope is {other:?}: use tenant or installation"),
            )
            .field("scope"));
        }
    };
    let Some((file_name, source)) = form.style else {
        return Err(ApiError::bad_request(
            "missing_style",
            "The upload has no style file: send it as the multipart file field `style`.",
        )
        .field("style"));
    };
    let name = form.name.unwrap_or_else(|| {
        file_name
            .strip_suffix(".toml")
            .unwrap_or(&file_name)
            .to_owned()
    });
    let house = house::read(&name, &source, form.files).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_style",
            format!("The style {name:?} cannot be used: {e}"),
        )
        .field(if e.line.is_some() { "style" } else { "files" })
        .line(e.line)
    })?;
    match house_styles::add(&state.db, &state.blobs, &owner, &house, form.replace).await {
        Ok(kept) => Ok(HttpResponse::Created().json(house_view(&kept, false))),
        Err(AddError::Exists(name)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "style_exists",
            format!(
                "There is a house style called {name} already: send replace=true to replace it \
                 (books already made keep their look until they are given it again)."
            ),
        )
        .field("name")),
        Err(AddError::Unexpected(e)) => Err(ApiError::from(e)),
    }
}

/// What a style's upload said.
#[derive(Default)]
struct Form {
    /// The style file's name and bytes.
    style: Option<(String, Bytes)>,
    files: Vec<(String, Bytes)>,
    name: Option<String>,
    replace: bool,
    scope: Option<String>,
}

async fn read_form(mut form: Multipart) -> Result<Form, ApiError> {
    let mut out = Form::default();
    let mut total = 0usize;
    while let Some(field) = form.next().await {
        let mut field = field.map_err(|e| malformed(&e.to_string()))?;
        let part = field.name().unwrap_or_default().to_owned();
        let file_name = field
            .content_disposition()
            .and_then(|d| d.get_filename())
            .map(str::to_owned);
        let limit = match part.as_str() {
            "style" => MAX_SOURCE_BYTES,
            "files" => MAX_FONT_BYTES,
            "name" | "replace" | "scope" => 256,
            other => {
                return Err(ApiError::bad_request(
                    "unknown_field",
                    format!(
                        "The form field {other:?} is not one a style's upload has: style, \
                         files, name, replace, scope."
                    ),
                )
                .field(other.to_owned()));
            }
        };
        let mut bytes = Vec::new();
        while let Some(chunk) = field.next().await {
            let chunk = chunk.map_err(|e| malformed(&e.to_string()))?;
            total += chunk.len();
            if bytes.len() + chunk.len() > limit || total > MAX_BODY_BYTES {
                return Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too_large",
                    format!(
                        "The field {part:?}{} is over its limit: a style file is at most {} KB, \
                         a font {} MB, all of a style's files {} MB.",
                        file_name
                            .as_deref()
                            .map(|n| format!(" ({n})"))
                            .unwrap_or_default(),
                        MAX_SOURCE_BYTES / 1024,
                        MAX_FONT_BYTES / 1_048_576,
                        (MAX_BODY_BYTES - MAX_SOURCE_BYTES) / 1_048_576
                    ),
                )
                .field(part));
            }
            bytes.extend_from_slice(&chunk);
        }
        let once = |given: bool| {
            if given {
                Err(ApiError::bad_request(
                    "duplicate_field",
                    format!("The form field {part:?} is sent more than once: send it once."),
                )
                .field(part.clone()))
            } else {
                Ok(())
            }
        };
        let text = |bytes: Vec<u8>| {
            String::from_utf8(bytes)
                .map(|s| s.trim().to_owned())
                .map_err(|_| {
                    ApiError::bad_request(
                        "invalid_field",
                        format!("The field {part:?} is not UTF-8 text."),
                    )
                    .field(part.clone())
                })
        };
        // A form's file input left empty sends a part with no name and no bytes: nothing.
        let empty_file = file_name.as_deref() == Some("") && bytes.is_empty();
        match part.as_str() {
            "style" | "files" if empty_file => {}
            "style" => {
                once(out.style.is_some())?;
                let name = file_name.unwrap_or_else(|| "style.toml".to_owned());
                out.style = Some((base_name(&name), Bytes::from(bytes)));
            }
            "files" => {
                if out.files.len() >= MAX_FILES {
                    return Err(ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid_style",
                        format!(
                            "More than {MAX_FILES} files came with the style: a style takes at \
                             most {MAX_FILES} (its font faces and ornament image)."
                        ),
                    )
                    .field("files"));
                }
                let Some(name) = file_name.filter(|n| !n.is_empty()) else {
                    return Err(ApiError::bad_request(
                        "invalid_field",
                        "A part of `files` has no file name: send each file with the name the \
                         style knows it by.",
                    )
                    .field("files"));
                };
                out.files.push((base_name(&name), Bytes::from(bytes)));
            }
            "name" => {
                once(out.name.is_some())?;
                // A form's name left empty: the style file's name says it.
                out.name = Some(text(bytes)?).filter(|name| !name.is_empty());
            }
            "replace" => {
                let value = text(bytes)?;
                out.replace = match value.as_str() {
                    "true" | "yes" | "1" | "on" => true,
                    "false" | "no" | "0" | "off" | "" => false,
                    other => {
                        return Err(ApiError::bad_request(
                            "invalid_field",
                            format!("replace is {other:?}: use true or false"),
                        )
                        .field("replace"));
                    }
                };
            }
            _ => {
                once(out.scope.is_some())?;
                out.scope = Some(text(bytes)?);
            }
        }
    }
    Ok(out)
}

/// A client's file name, its last path segment.
fn base_name(name: &str) -> String {
    name.rsplit(['/', '\\']).next().unwrap_or(name).to_owned()
}

#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RemoveQuery {
    /// `installation` to remove a style an admin added for every tenant (admins only).
    scope: Option<String>,
}

/// Remove a house style
///
/// Books already made with it keep their look and their copies of its files; it is no longer
/// offered, and a book that names it is made in the default style.
#[utoipa::path(
    operation_id = "remove_style",
    tag = "styles",
    params(("name" = String, Path, description = "The style's name."), RemoveQuery),
    responses(
        (status = 204, description = "Removed."),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, response = NotFound),
        (status = 429, response = RateLimited),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[delete("/styles/{name}")]
pub async fn remove(
    state: web::Data<AppState>,
    caller: Caller,
    name: web::Path<String>,
    query: Query<RemoveQuery>,
) -> Result<HttpResponse, ApiError> {
    let tenant = caller.tenant();
    let not_found = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "style_not_found",
            format!(
                "There is no house style called {:?} of yours here (a built-in style cannot be \
                 removed).",
                name.as_str()
            ),
        )
    };
    let owner = match query.parsed()?.scope.as_deref() {
        Some("installation") if caller.0.admin => Owner::Everyone,
        Some("installation") => return Err(not_found()),
        _ => Owner::Tenant(tenant.clone()),
    };
    let style = StyleName::parse(&name).map_err(|_| not_found())?;
    check_write(&state, &tenant)?;
    if house_styles::remove(&state.db, &owner, &style).await? {
        Ok(HttpResponse::NoContent().finish())
    } else {
        Err(not_found())
    }
}

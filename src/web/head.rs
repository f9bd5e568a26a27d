//! HEAD answers like GET, everywhere: the request is routed as a GET, and the HTTP layer, which
//! saw the HEAD, sends the GET's status and headers (`Content-Length` included) without the
//! body. A body of unknown length (an event stream) is dropped here rather than run for
//! nobody.

use actix_web::Error;
use actix_web::body::{self, BodySize, EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;

pub async fn head_as_get(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody, body::None>>, Error> {
    let head = req.method() == Method::HEAD;
    if head {
        req.head_mut().method = Method::GET;
    }
    let response = next.call(req).await?;
    if head && matches!(response.response().body().size(), BodySize::Stream) {
        return Ok(response.map_body(|_, _| EitherBody::right(body::None::new())));
    }
    Ok(response.map_into_left_body())
}

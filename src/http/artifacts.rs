//! The artifact route: `GET <rest-prefix>/tasks/{id}/artifacts/{file}` (and `HEAD`)
//! serves a stored artifact file to the owner of its task.
//!
//! The caller is authenticated like every other route, and the task is read with its owner
//! ([`crate::core::Core::artifact_file`], the same owner-scoped read as GetTask): another
//! owner's task answers TASK_NOT_FOUND like an unknown one. The answer carries the part's
//! `mediaType` as `Content-Type`, `Content-Length`, the file's SHA-256 as a strong `ETag`
//! (`If-None-Match` answers 304), `Accept-Ranges: bytes`, and `Content-Disposition:
//! attachment` with the part's `filename`. One byte range (`bytes=a-b`, `a-`, `-n`) is
//! answered 206 with `Content-Range`, a range past the end 416 (`Content-Range: bytes
//! */size`); several ranges, another unit, a malformed header or an `If-Range` that names
//! another version are answered with the whole file (RFC 9110 lets a server ignore
//! `Range`). `nosniff` keeps a browser from reading a file as another type.

use super::caller::caller;
use super::rest_shared::{error_response, refusal_response};
use super::{observe, AppState};
use crate::metrics::Binding;
use a2ad_protocol::{A2aError, ErrorCode};
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

/// The label of the route in logs and metrics.
const ROUTE: &str = "GetArtifactFile";

/// Mounts the route under `prefix` (the HTTP+JSON prefix).
pub fn routes(cfg: &mut web::ServiceConfig, prefix: &str) {
    let path = format!("{prefix}/tasks/{{id}}/artifacts/{{file}}");
    cfg.route(&path, web::get().to(serve)).route(&path, web::head().to(serve));
}

/// Which bytes of a file of `len` bytes a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    Whole,
    /// From `start` to `end`, both included.
    Part {
        start: u64,
        end: u64,
    },
    Unsatisfiable,
}

async fn serve(req: HttpRequest, state: web::Data<AppState>, path: web::Path<(String, String)>) -> HttpResponse {
    observe::served(&req, Binding::Rest, ROUTE);
    let owner = match caller(&req, &state.core).await {
        Ok(owner) => owner,
        Err(refused) => return refusal_response(refused),
    };
    let (task_id, name) = path.into_inner();
    let stored = match state.core.artifact_file(&owner, &task_id, &name).await {
        Ok(stored) => stored,
        Err(e) => return error_response(&e),
    };
    // Gone from the disk (removed by hand, or by retention meanwhile): as unknown.
    let gone = || error_response(&A2aError::of(ErrorCode::ArtifactNotFound).with_meta("taskId", &task_id));
    let Ok(mut file) = tokio::fs::File::open(&stored.path).await else { return gone() };
    let Ok(len) = file.metadata().await.map(|m| m.len()) else { return gone() };
    let etag = stored.sha256.as_ref().map(|hash| format!("\"{hash}\""));
    if etag.as_deref().is_some_and(|etag| header_lists(&req, header::IF_NONE_MATCH, etag)) {
        return with_etag(&mut HttpResponse::NotModified(), etag.as_deref()).finish();
    }
    let wanted = match if_range_holds(&req, etag.as_deref()) {
        true => wanted(req.headers().get(header::RANGE).and_then(|v| v.to_str().ok()), len),
        false => Wanted::Whole,
    };
    let (mut response, start, count) = match wanted {
        Wanted::Whole => (HttpResponse::Ok(), 0, len),
        Wanted::Part { start, end } => {
            let mut partial = HttpResponse::PartialContent();
            partial.insert_header((header::CONTENT_RANGE, format!("bytes {start}-{end}/{len}")));
            (partial, start, end - start + 1)
        }
        Wanted::Unsatisfiable => {
            let mut refused = error_response(&A2aError::of(ErrorCode::RangeNotSatisfiable));
            if let Ok(value) = header::HeaderValue::from_str(&format!("bytes */{len}")) {
                refused.headers_mut().insert(header::CONTENT_RANGE, value);
            }
            return refused;
        }
    };
    if start > 0 && file.seek(std::io::SeekFrom::Start(start)).await.is_err() {
        return gone();
    }
    let name = stored.filename.as_deref().unwrap_or(&name);
    with_etag(&mut response, etag.as_deref())
        .content_type(served_type(&stored.media_type))
        .insert_header((header::ACCEPT_RANGES, "bytes"))
        .insert_header((header::CONTENT_DISPOSITION, a2ad_node::artifacts::content_disposition(name)))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "private, no-cache"));
    let body = tokio_util::io::ReaderStream::new(file.take(count));
    response.body(actix_web::body::SizedStream::new(count, body))
}

fn with_etag<'a>(
    response: &'a mut actix_web::HttpResponseBuilder,
    etag: Option<&str>,
) -> &'a mut actix_web::HttpResponseBuilder {
    if let Some(etag) = etag {
        response.insert_header((header::ETAG, etag));
    }
    response
}

/// Whether the header `name` lists `etag` (or `*`).
fn header_lists(req: &HttpRequest, name: header::HeaderName, etag: &str) -> bool {
    req.headers()
        .get_all(name)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|listed| listed == "*" || listed == etag || listed.strip_prefix("W/") == Some(etag))
}

/// Whether a `Range` is to be honoured: no `If-Range`, or one naming this version.
fn if_range_holds(req: &HttpRequest, etag: Option<&str>) -> bool {
    match req.headers().get(header::IF_RANGE).and_then(|v| v.to_str().ok()) {
        None => true,
        Some(given) => etag == Some(given.trim()),
    }
}

/// The bytes a `Range` header asks for of a file of `len` bytes (see the module doc).
fn wanted(range: Option<&str>, len: u64) -> Wanted {
    let Some(spec) = range.and_then(|r| r.trim().strip_prefix("bytes=")) else { return Wanted::Whole };
    if spec.contains(',') {
        return Wanted::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else { return Wanted::Whole };
    let number = |text: &str| text.trim().parse::<u64>().ok();
    match (first.trim().is_empty(), number(first), number(last)) {
        // `-n`: the last n bytes.
        (true, _, Some(0)) => Wanted::Unsatisfiable,
        (true, _, Some(_)) if len == 0 => Wanted::Unsatisfiable,
        (true, _, Some(suffix)) => Wanted::Part { start: len.saturating_sub(suffix), end: len - 1 },
        (false, Some(start), _) if start >= len => Wanted::Unsatisfiable,
        (false, Some(start), None) if last.trim().is_empty() => Wanted::Part { start, end: len - 1 },
        (false, Some(start), Some(end)) if end >= start => Wanted::Part { start, end: end.min(len - 1) },
        _ => Wanted::Whole,
    }
}

/// The part's media type when it can be one (`type/subtype`, visible ASCII: an agent
/// wrote it), else `application/octet-stream`.
fn served_type(media_type: &str) -> &str {
    let plausible = media_type.contains('/') && media_type.bytes().all(|b| b.is_ascii_graphic() || b == b' ');
    if plausible {
        media_type
    } else {
        "application/octet-stream"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_range_is_read_and_others_are_ignored_or_refused() {
        assert_eq!(wanted(None, 10), Wanted::Whole);
        assert_eq!(wanted(Some("bytes=0-3"), 10), Wanted::Part { start: 0, end: 3 });
        assert_eq!(wanted(Some("bytes=4-"), 10), Wanted::Part { start: 4, end: 9 });
        assert_eq!(wanted(Some("bytes=-3"), 10), Wanted::Part { start: 7, end: 9 });
        assert_eq!(wanted(Some("bytes=-30"), 10), Wanted::Part { start: 0, end: 9 });
        assert_eq!(wanted(Some("bytes=5-100"), 10), Wanted::Part { start: 5, end: 9 });
        assert_eq!(wanted(Some("bytes=10-"), 10), Wanted::Unsatisfiable);
        assert_eq!(wanted(Some("bytes=-0"), 10), Wanted::Unsatisfiable);
        assert_eq!(wanted(Some("bytes=0-"), 0), Wanted::Unsatisfiable);
        for ignored in ["bytes=0-1,3-4", "items=0-1", "bytes=5-2", "bytes=x-", "bytes=-"] {
            assert_eq!(wanted(Some(ignored), 10), Wanted::Whole, "{ignored}");
        }
    }

    #[test]
    fn the_file_name_and_type_are_quoted_safely() {
        assert_eq!(served_type("text/markdown; charset=utf-8"), "text/markdown; charset=utf-8");
        assert_eq!(served_type("text/html\r\nSet-Cookie: x"), "application/octet-stream");
        assert_eq!(served_type("nonsense"), "application/octet-stream");
    }
}

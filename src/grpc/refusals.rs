//! The statuses tonic answers by itself, restated by the error table.
//!
//! tonic's codec refuses a request message before any of our code runs: one that does not
//! decode as the method's request is INTERNAL, one over `max_decoding_message_size` is
//! OUT_OF_RANGE, both without a `google.rpc.ErrorInfo`. The table says a bad request is
//! INVALID_ARGUMENT (InvalidRequest) and an oversized one RESOURCE_EXHAUSTED
//! (PayloadTooLarge), with ErrorInfo like every other refusal, so [`TableStatuses`] wraps
//! the service and restates those answers. Ours always carry ErrorInfo
//! (`grpc-status-details-bin`), which is how they are told apart and left alone.

use super::convert::to_status;
use a2ad_protocol::{A2aError, ErrorCode};
use futures_util::future::BoxFuture;
use std::convert::Infallible;
use std::task::{Context, Poll};
use tonic::codegen::{http, Service};
use tonic::server::NamedService;
use tonic::{Code, Status};

/// The header our statuses carry their ErrorInfo in.
const DETAILS_HEADER: &str = "grpc-status-details-bin";

/// A gRPC service whose codec refusals are answered as the error table says.
#[derive(Clone)]
pub struct TableStatuses<S> {
    inner: S,
    /// The largest request message, for the PayloadTooLarge message.
    message_limit: usize,
}

impl<S> TableStatuses<S> {
    pub fn new(inner: S, message_limit: usize) -> Self {
        TableStatuses { inner, message_limit }
    }
}

impl<S: NamedService> NamedService for TableStatuses<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> Service<http::Request<B>> for TableStatuses<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let limit = self.message_limit;
        let answered = self.inner.call(request);
        Box::pin(async move { Ok(restate(answered.await?, limit)) })
    }
}

/// A trailers-only refusal from the codec, as the table's status; anything else as it is.
fn restate(response: http::Response<tonic::body::Body>, limit: usize) -> http::Response<tonic::body::Body> {
    if response.headers().contains_key(DETAILS_HEADER) {
        return response;
    }
    let Some(status) = Status::from_header_map(response.headers()) else { return response };
    match codec_error(status.code(), limit) {
        Some(error) => to_status(error).into_http(),
        None => response,
    }
}

/// What the codec meant by `code`, if it is one of its refusals.
fn codec_error(code: Code, limit: usize) -> Option<A2aError> {
    match code {
        Code::OutOfRange => Some(
            A2aError::new(
                ErrorCode::PayloadTooLarge,
                format!("Request message is larger than the limit of {limit} bytes"),
            )
            .with_meta("limitBytes", limit.to_string()),
        ),
        Code::Internal => Some(A2aError::new(
            ErrorCode::InvalidRequest,
            "Invalid request: the message could not be decoded as the method's request",
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic_types::StatusExt;

    #[test]
    fn codec_refusals_become_the_tables_statuses_with_error_info() {
        let too_large: http::Response<tonic::body::Body> = Status::out_of_range("too long").into_http();
        let restated = Status::from_header_map(restate(too_large, 10).headers()).unwrap();
        assert_eq!(restated.code(), Code::ResourceExhausted);
        let bad: http::Response<tonic::body::Body> = Status::internal("failed to decode").into_http();
        let restated = restate(bad, 10);
        assert!(restated.headers().contains_key(DETAILS_HEADER));
        let restated = Status::from_header_map(restated.headers()).unwrap();
        assert_eq!(restated.code(), Code::InvalidArgument);
        assert_eq!(restated.get_details_error_info().unwrap().reason, "INVALID_REQUEST");
        let ours: http::Response<tonic::body::Body> = to_status(A2aError::internal("x")).into_http();
        assert_eq!(Status::from_header_map(restate(ours, 10).headers()).unwrap().code(), Code::Internal);
    }
}

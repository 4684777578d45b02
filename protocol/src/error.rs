//! The one error-code table.
//!
//! Every error a2ad returns, on every binding, is an [`A2aError`]: an [`ErrorCode`] plus a
//! human message and optional metadata. The code decides everything else: the JSON-RPC
//! code, the HTTP status, the gRPC status and the `google.rpc.ErrorInfo` reason, from
//! [`ErrorCode::info`]. Subsystems keep their own `thiserror` enums and convert into this
//! one at the boundary, so no binding ever invents a status of its own.
//!
//! The mapping follows spec v1.0.1 §5.4 (see `shared/a2a/spec-1.0.md`, section 4).

use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt;

/// The `domain` of every ErrorInfo we emit.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// The `@type` of a `google.rpc.ErrorInfo` detail.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// gRPC status codes (`google.rpc.Code`), kept here so that the table has no tonic
/// dependency; the gRPC binding converts by number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrpcStatus {
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    Unauthenticated = 16,
}

impl GrpcStatus {
    /// The canonical name, as google.rpc.Status JSON writes it (`NOT_FOUND`).
    pub fn name(self) -> &'static str {
        match self {
            GrpcStatus::InvalidArgument => "INVALID_ARGUMENT",
            GrpcStatus::DeadlineExceeded => "DEADLINE_EXCEEDED",
            GrpcStatus::NotFound => "NOT_FOUND",
            GrpcStatus::PermissionDenied => "PERMISSION_DENIED",
            GrpcStatus::ResourceExhausted => "RESOURCE_EXHAUSTED",
            GrpcStatus::FailedPrecondition => "FAILED_PRECONDITION",
            GrpcStatus::OutOfRange => "OUT_OF_RANGE",
            GrpcStatus::Unimplemented => "UNIMPLEMENTED",
            GrpcStatus::Internal => "INTERNAL",
            GrpcStatus::Unavailable => "UNAVAILABLE",
            GrpcStatus::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct CodeInfo {
    pub jsonrpc: i32,
    pub http: u16,
    pub grpc: GrpcStatus,
    pub reason: &'static str,
    /// The message used when the caller has nothing more specific to say.
    pub title: &'static str,
}

/// Every kind of error a2ad can return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    // Standard JSON-RPC errors.
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
    // A2A errors (-32001..-32009).
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
    // a2ad's own, in the server range: the request was fine but the node cannot take it.
    PayloadTooLarge,
    /// A request body that is not declared as JSON (`Content-Type`): refused before it is
    /// read, so that a browser's form or `text/plain` post (a CORS "simple request", sent
    /// without a preflight) cannot reach a method. It is the spec's -32005
    /// CONTENT_TYPE_NOT_SUPPORTED (a client keys on the code and the reason), kept apart
    /// from [`ErrorCode::ContentTypeNotSupported`] only for its HTTP status: 415, since the
    /// body was never read, where a part the agent does not take is a 400.
    UnsupportedMediaType,
    /// The request body did not arrive in time (`body-timeout`, `body-min-rate`); the
    /// connection is closed.
    RequestTimeout,
    ServerBusy,
    /// A stream's subscriber fell behind its bounded buffer and was dropped; it resumes
    /// with `SubscribeToTask` and `Last-Event-ID`.
    SubscriberTooSlow,
    /// The caller's request rate is over its limit (answered with `Retry-After`).
    RateLimited,
    /// A concurrency limit (running turns per tenant or per node) is reached; the message
    /// names it.
    LimitExceeded,
    /// The request carried no credential, or one the authenticator refused. HTTP answers
    /// this with a plain 401 before any JSON-RPC is read; the message transports (Redis
    /// Streams) carry the credential in-band and answer with this code. -31401 is what
    /// a2a-go uses (the spec names no JSON-RPC code for it).
    Unauthenticated,
    /// The task store cannot make a write durable (the disk is full or failing). Nothing
    /// was acknowledged; the node heals by itself once the disk does, so the caller
    /// retries (answered with `Retry-After`).
    StoreUnavailable,
    /// A stored artifact file the caller's task does not list (or no longer has): the
    /// artifact route (`GET .../tasks/{id}/artifacts/{file}`) of a task the caller owns.
    ArtifactNotFound,
    /// A `Range` an artifact file cannot satisfy (416, with `Content-Range: bytes */<size>`).
    RangeNotSatisfiable,
    /// An operator of the admin API whose role does not allow the action (a viewer's
    /// cancel or retry), or an admin request from another site's page (a foreign
    /// `Origin`). -31403 follows -31401.
    PermissionDenied,
}

impl ErrorCode {
    /// The table itself.
    pub const fn info(self) -> CodeInfo {
        use GrpcStatus::*;
        let (jsonrpc, http, grpc, reason, title) = match self {
            ErrorCode::ParseError => (-32700, 400, InvalidArgument, "INVALID_REQUEST", "Invalid JSON payload"),
            ErrorCode::InvalidRequest => (-32600, 400, InvalidArgument, "INVALID_REQUEST", "Invalid request"),
            ErrorCode::MethodNotFound => (-32601, 404, Unimplemented, "METHOD_NOT_FOUND", "Method not found"),
            ErrorCode::InvalidParams => (-32602, 400, InvalidArgument, "INVALID_PARAMS", "Invalid params"),
            ErrorCode::Internal => (-32603, 500, Internal, "INTERNAL_ERROR", "Internal error"),
            ErrorCode::TaskNotFound => (-32001, 404, NotFound, "TASK_NOT_FOUND", "Task not found"),
            ErrorCode::TaskNotCancelable => {
                (-32002, 400, FailedPrecondition, "TASK_NOT_CANCELABLE", "Task cannot be canceled")
            }
            ErrorCode::PushNotificationNotSupported => (
                -32003,
                400,
                FailedPrecondition,
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
                "Push notifications are not supported",
            ),
            ErrorCode::UnsupportedOperation => {
                (-32004, 400, FailedPrecondition, "UNSUPPORTED_OPERATION", "This operation is not supported")
            }
            ErrorCode::ContentTypeNotSupported => {
                (-32005, 400, InvalidArgument, "CONTENT_TYPE_NOT_SUPPORTED", "Incompatible content types")
            }
            ErrorCode::InvalidAgentResponse => {
                (-32006, 500, Internal, "INVALID_AGENT_RESPONSE", "Invalid agent response")
            }
            ErrorCode::ExtendedAgentCardNotConfigured => (
                -32007,
                400,
                FailedPrecondition,
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
                "Extended agent card is not configured",
            ),
            ErrorCode::ExtensionSupportRequired => (
                -32008,
                400,
                FailedPrecondition,
                "EXTENSION_SUPPORT_REQUIRED",
                "A required extension was not activated",
            ),
            ErrorCode::VersionNotSupported => {
                (-32009, 400, FailedPrecondition, "VERSION_NOT_SUPPORTED", "Protocol version is not supported")
            }
            ErrorCode::PayloadTooLarge => {
                (-32600, 413, ResourceExhausted, "PAYLOAD_TOO_LARGE", "Request body is too large")
            }
            ErrorCode::UnsupportedMediaType => (
                -32005,
                415,
                InvalidArgument,
                "CONTENT_TYPE_NOT_SUPPORTED",
                "Request body must be JSON (Content-Type: application/json)",
            ),
            ErrorCode::RequestTimeout => {
                (-32600, 408, DeadlineExceeded, "REQUEST_TIMEOUT", "The request body did not arrive in time")
            }
            ErrorCode::ServerBusy => (-32050, 503, Unavailable, "SERVER_BUSY", "The node is at capacity"),
            ErrorCode::RateLimited => (-32052, 429, ResourceExhausted, "RATE_LIMITED", "Too many requests"),
            ErrorCode::LimitExceeded => (-32053, 429, ResourceExhausted, "LIMIT_EXCEEDED", "A limit was reached"),
            ErrorCode::Unauthenticated => (-31401, 401, Unauthenticated, "UNAUTHENTICATED", "Authentication required"),
            ErrorCode::StoreUnavailable => (
                -32054,
                503,
                Unavailable,
                "STORE_UNAVAILABLE",
                "The task store cannot make writes durable; try again later",
            ),
            ErrorCode::ArtifactNotFound => (-32055, 404, NotFound, "ARTIFACT_NOT_FOUND", "Artifact file not found"),
            ErrorCode::RangeNotSatisfiable => {
                (-32056, 416, OutOfRange, "RANGE_NOT_SATISFIABLE", "The requested range is not satisfiable")
            }
            ErrorCode::PermissionDenied => {
                (-31403, 403, PermissionDenied, "PERMISSION_DENIED", "The caller may not do this")
            }
            ErrorCode::SubscriberTooSlow => (
                -32051,
                503,
                ResourceExhausted,
                "SUBSCRIBER_TOO_SLOW",
                "The stream fell behind and was dropped; resume with Last-Event-ID",
            ),
        };
        CodeInfo { jsonrpc, http, grpc, reason, title }
    }

    /// Every code, for tests and docs.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::ParseError,
        ErrorCode::InvalidRequest,
        ErrorCode::MethodNotFound,
        ErrorCode::InvalidParams,
        ErrorCode::Internal,
        ErrorCode::TaskNotFound,
        ErrorCode::TaskNotCancelable,
        ErrorCode::PushNotificationNotSupported,
        ErrorCode::UnsupportedOperation,
        ErrorCode::ContentTypeNotSupported,
        ErrorCode::InvalidAgentResponse,
        ErrorCode::ExtendedAgentCardNotConfigured,
        ErrorCode::ExtensionSupportRequired,
        ErrorCode::VersionNotSupported,
        ErrorCode::PayloadTooLarge,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::RequestTimeout,
        ErrorCode::ServerBusy,
        ErrorCode::SubscriberTooSlow,
        ErrorCode::RateLimited,
        ErrorCode::LimitExceeded,
        ErrorCode::Unauthenticated,
        ErrorCode::StoreUnavailable,
        ErrorCode::ArtifactNotFound,
        ErrorCode::RangeNotSatisfiable,
        ErrorCode::PermissionDenied,
    ];
}

/// An error as every binding reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct A2aError {
    pub code: ErrorCode,
    /// Safe to show a caller: never a path, a secret or a backtrace.
    pub message: String,
    /// Goes into `ErrorInfo.metadata` (e.g. the offending field or task id).
    pub metadata: BTreeMap<String, String>,
    /// For internal errors: what went wrong, for the log only (never sent). The caller
    /// gets a correlation id that finds it there.
    pub detail: Option<String>,
}

impl A2aError {
    /// An error with an explicit message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        A2aError { code, message: message.into(), metadata: BTreeMap::new(), detail: None }
    }

    /// An error with the table's default message.
    pub fn of(code: ErrorCode) -> Self {
        Self::new(code, code.info().title)
    }

    /// Adds one `ErrorInfo.metadata` entry.
    pub fn with_meta(mut self, key: &str, value: impl Into<String>) -> Self {
        self.metadata.insert(key.to_owned(), value.into());
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParams, message)
    }

    /// InvalidParams that names the offending field.
    pub fn invalid_field(field: &str, problem: &str) -> Self {
        Self::new(ErrorCode::InvalidParams, format!("Invalid params: `{field}` {problem}")).with_meta("field", field)
    }

    pub fn task_not_found(task_id: &str) -> Self {
        Self::of(ErrorCode::TaskNotFound).with_meta("taskId", task_id)
    }

    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::UnsupportedOperation, message)
    }

    /// An unexpected failure. The caller sees only "Internal error" and a correlation id;
    /// `detail` stays in the log (see [`A2aError::detail`]).
    pub fn internal(detail: impl Into<String>) -> Self {
        let correlation = uuid::Uuid::new_v4().simple().to_string();
        let mut error = Self::new(ErrorCode::Internal, format!("Internal error (correlation id {correlation})"))
            .with_meta("correlationId", correlation);
        error.detail = Some(detail.into());
        error
    }

    /// The store refused a write ([`ErrorCode::StoreUnavailable`]); `Retry-After: 1`.
    pub fn store_unavailable() -> Self {
        Self::of(ErrorCode::StoreUnavailable).with_meta("retryAfterSeconds", "1")
    }

    /// The seconds a caller should wait before retrying (`Retry-After` on HTTP,
    /// `retry-after` metadata on gRPC): what the error says (`retryAfterSeconds`), else one
    /// second for every refusal the table answers with 429 (rate and concurrency limits)
    /// or 503 (busy, store unavailable); `None` for errors a retry does not cure.
    pub fn retry_after(&self) -> Option<&str> {
        if let Some(seconds) = self.metadata.get("retryAfterSeconds") {
            return Some(seconds);
        }
        matches!(self.code.info().http, 429 | 503).then_some("1")
    }

    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ServerBusy, message)
    }

    /// The `google.rpc.ErrorInfo` detail, as JSON.
    pub fn error_info(&self) -> Value {
        json!({
            "@type": ERROR_INFO_TYPE,
            "reason": self.code.info().reason,
            "domain": ERROR_DOMAIN,
            "metadata": self.metadata,
        })
    }

    /// The JSON-RPC `error` member: `{code, message, data: [ErrorInfo]}`.
    pub fn to_jsonrpc(&self) -> JsonRpcErrorObject {
        JsonRpcErrorObject {
            code: self.code.info().jsonrpc,
            message: self.message.clone(),
            data: vec![self.error_info()],
        }
    }

    /// The HTTP+JSON body: `google.rpc.Status` as JSON (AIP-193).
    pub fn to_rest_body(&self) -> Value {
        let info = self.code.info();
        json!({"error": {
            "code": info.http,
            "status": info.grpc.name(),
            "message": self.message,
            "details": [self.error_info()],
        }})
    }
}

impl fmt::Display for A2aError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code.info().reason)
    }
}

impl std::error::Error for A2aError {}

/// The `error` member of a JSON-RPC response.
#[derive(Debug, Clone, Serialize)]
pub struct JsonRpcErrorObject {
    pub code: i32,
    pub message: String,
    pub data: Vec<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a2a_codes_follow_spec_section_5_4() {
        let t = ErrorCode::TaskNotFound.info();
        assert_eq!((t.jsonrpc, t.http, t.grpc, t.reason), (-32001, 404, GrpcStatus::NotFound, "TASK_NOT_FOUND"));
        let v = ErrorCode::VersionNotSupported.info();
        assert_eq!((v.jsonrpc, v.http, v.grpc), (-32009, 400, GrpcStatus::FailedPrecondition));
        assert_eq!(ErrorCode::InvalidAgentResponse.info().http, 500);
        let u = ErrorCode::Unauthenticated.info();
        assert_eq!(
            (u.jsonrpc, u.http, u.grpc, u.reason),
            (-31401, 401, GrpcStatus::Unauthenticated, "UNAUTHENTICATED")
        );
    }

    #[test]
    fn jsonrpc_error_carries_error_info_array() {
        let e = A2aError::task_not_found("t1");
        let v = serde_json::to_value(e.to_jsonrpc()).unwrap();
        assert_eq!(v["code"], -32001);
        assert_eq!(v["data"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(v["data"][0]["metadata"]["taskId"], "t1");
        assert_eq!(e.to_rest_body()["error"]["status"], "NOT_FOUND");
    }

    #[test]
    fn internal_errors_carry_a_correlation_id_not_the_detail() {
        let e = A2aError::internal("sled: /var/lib/a2ad/db: permission denied");
        let wire = serde_json::to_string(&e.to_jsonrpc()).unwrap() + &e.to_rest_body().to_string();
        assert!(!wire.contains("/var/lib") && !wire.contains("permission"), "{wire}");
        let id = e.metadata["correlationId"].clone();
        assert!(e.message.contains(&id) && wire.contains(&id));
        assert_eq!(e.detail.as_deref(), Some("sled: /var/lib/a2ad/db: permission denied"));
    }

    #[test]
    fn refusals_a_retry_cures_say_when() {
        assert_eq!(A2aError::of(ErrorCode::LimitExceeded).retry_after(), Some("1"));
        assert_eq!(A2aError::of(ErrorCode::RateLimited).with_meta("retryAfterSeconds", "3").retry_after(), Some("3"));
        assert_eq!(A2aError::of(ErrorCode::InvalidRequest).retry_after(), None);
    }

    #[test]
    fn a_body_not_declared_json_is_the_content_type_row_with_415() {
        let (media, row) = (ErrorCode::UnsupportedMediaType.info(), ErrorCode::ContentTypeNotSupported.info());
        assert_eq!((media.jsonrpc, media.reason, media.grpc), (row.jsonrpc, row.reason, row.grpc));
        assert_eq!((media.jsonrpc, media.http), (-32005, 415));
    }

    #[test]
    fn every_code_has_a_reason_and_a_title() {
        for code in ErrorCode::ALL {
            let info = code.info();
            assert!(!info.reason.is_empty() && !info.title.is_empty());
            assert!((400..600).contains(&info.http));
        }
    }
}

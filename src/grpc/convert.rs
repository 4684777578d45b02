//! Between `a2a-pb`'s prost types, their ProtoJSON twins, our JSON, and gRPC statuses.

use a2ad_protocol::error::ERROR_DOMAIN;
use a2ad_protocol::{A2aError, ErrorCode};
use prost::Message;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// A prost message as ProtoJSON, through its twin type `J` (same proto, with serde).
pub fn to_json<P: Message, J: Message + Default + Serialize>(message: &P) -> Result<Value, Status> {
    let twin = J::decode(message.encode_to_vec().as_slice())
        .map_err(|e| to_status(A2aError::new(ErrorCode::InvalidRequest, format!("Invalid request: {e}"))))?;
    serde_json::to_value(&twin).map_err(|e| to_status(A2aError::internal(format!("request to JSON: {e}"))))
}

/// ProtoJSON (as our core writes it) into a prost message, through its twin `J`.
pub fn from_json<J: Message + DeserializeOwned, P: Message + Default>(value: Value) -> Result<P, Status> {
    let twin: J =
        serde_json::from_value(value).map_err(|e| to_status(A2aError::internal(format!("Internal error: {e}"))))?;
    P::decode(twin.encode_to_vec().as_slice())
        .map_err(|e| to_status(A2aError::internal(format!("result to prost: {e}"))))
}

/// The error table's gRPC status, with a `google.rpc.ErrorInfo` in the details, and a
/// `retry-after` (seconds) in the metadata when a retry cures it (rate and concurrency
/// limits are RESOURCE_EXHAUSTED, as HTTP's 429).
pub fn to_status(error: A2aError) -> Status {
    crate::core::report(&error);
    let info = error.code.info();
    let retry_after = error.retry_after().and_then(|s| s.parse().ok());
    let metadata: HashMap<String, String> = error.metadata.into_iter().collect();
    let details = ErrorDetails::with_error_info(info.reason, ERROR_DOMAIN, metadata);
    let mut status = Status::with_error_details(Code::from_i32(info.grpc as i32), error.message, details);
    if let Some(seconds) = retry_after {
        status.metadata_mut().insert("retry-after", seconds);
    }
    status
}

//! Every `lf.a2a.v1` message as ProtoJSON.

mod card;
mod enums;
mod message;
pub(crate) mod protojson;
mod push;
mod requests;
mod task;

pub use card::*;
pub use enums::{Role, TaskState};
pub use message::{decode_base64, Message, Part, PartContent};
pub use push::{AuthenticationInfo, TaskPushNotificationConfig};
pub use requests::*;
pub use task::*;

/// A `google.protobuf.Struct`: free-form JSON object.
pub type Metadata = serde_json::Map<String, serde_json::Value>;

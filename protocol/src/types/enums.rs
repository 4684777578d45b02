//! The two protocol enums. ProtoJSON writes enums by name and must read names or numbers.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Declares a proto enum with its wire names and numbers, and serde impls that write the
/// name and read the name or the number.
macro_rules! proto_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $num:literal => $wire:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vmeta])* $variant,)+ }

        impl $name {
            /// Every value, in proto order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The ProtoJSON name, e.g. `TASK_STATE_WORKING`.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire,)+ }
            }

            /// The proto number.
            pub fn number(self) -> i32 {
                match self { $($name::$variant => $num,)+ }
            }

            /// Looks a value up by proto number.
            pub fn from_number(n: i64) -> Option<Self> {
                match n { $($num => Some($name::$variant),)+ _ => None }
            }

            /// Looks a value up by ProtoJSON name.
            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($wire => Some($name::$variant),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "a {} name or number", stringify!($name))
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        $name::from_name(v)
                            .ok_or_else(|| E::custom(format!("unknown {} `{v}`", stringify!($name))))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        $name::from_number(v)
                            .ok_or_else(|| E::custom(format!("unknown {} number {v}", stringify!($name))))
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

proto_enum! {
    /// `lf.a2a.v1.TaskState`.
    TaskState {
        Unspecified = 0 => "TASK_STATE_UNSPECIFIED",
        Submitted = 1 => "TASK_STATE_SUBMITTED",
        Working = 2 => "TASK_STATE_WORKING",
        Completed = 3 => "TASK_STATE_COMPLETED",
        Failed = 4 => "TASK_STATE_FAILED",
        Canceled = 5 => "TASK_STATE_CANCELED",
        InputRequired = 6 => "TASK_STATE_INPUT_REQUIRED",
        Rejected = 7 => "TASK_STATE_REJECTED",
        AuthRequired = 8 => "TASK_STATE_AUTH_REQUIRED",
    }
}

impl TaskState {
    /// Completed, failed, canceled and rejected: nothing leaves these states.
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected)
    }

    /// Input-required and auth-required: the task waits for the client.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Submitted and working: a turn is (or should be) running.
    pub fn is_active(self) -> bool {
        matches!(self, TaskState::Submitted | TaskState::Working)
    }

    /// Where a blocking `SendMessage` stops waiting and a stream closes.
    pub fn ends_turn(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }
}

proto_enum! {
    /// `lf.a2a.v1.Role`.
    Role {
        Unspecified = 0 => "ROLE_UNSPECIFIED",
        User = 1 => "ROLE_USER",
        Agent = 2 => "ROLE_AGENT",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_read_names_and_numbers_and_write_names() {
        let s: TaskState = serde_json::from_str("\"TASK_STATE_INPUT_REQUIRED\"").unwrap();
        assert_eq!(s, TaskState::InputRequired);
        let s: TaskState = serde_json::from_str("3").unwrap();
        assert_eq!(s, TaskState::Completed);
        assert_eq!(serde_json::to_string(&Role::Agent).unwrap(), "\"ROLE_AGENT\"");
        assert!(serde_json::from_str::<Role>("\"user\"").is_err());
        assert!(serde_json::from_str::<TaskState>("42").is_err());
    }
}

//! Every A2A method, named once.
//!
//! [`Method`] is the one list of what a node answers. Its table ([`Method::info`]) gives
//! each method's 1.0 name (the JSON-RPC `method` and the gRPC RPC), its HTTP+JSON routes,
//! and its names in the 0.3 and 0.1 dialects. JSON-RPC dispatch, the REST route table,
//! the gRPC service, the 0.3/0.1 dialects and the metrics labels all read it, so a new
//! method is one variant and one row here (then the compiler asks for its decoding and
//! its handler), as mini-redis names its commands in `src/cmd/mod.rs`.

/// An A2A 1.0 method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreateTaskPushNotificationConfig,
    GetTaskPushNotificationConfig,
    ListTaskPushNotificationConfigs,
    DeleteTaskPushNotificationConfig,
    GetExtendedAgentCard,
}

/// One row of the method table.
#[derive(Debug, Clone, Copy)]
pub struct MethodInfo {
    /// The 1.0 name: JSON-RPC's `method` and the gRPC RPC (`lf.a2a.v1.A2AService`).
    pub name: &'static str,
    /// The HTTP+JSON routes, `(HTTP method, path under the binding's prefix)`; `{id}` and
    /// `{taskId}` never hold `/` or `:` (task ids minted by the node have neither).
    pub rest: &'static [(&'static str, &'static str)],
    /// The A2A 0.3 JSON-RPC name, if 0.3 has the method.
    pub v03: Option<&'static str>,
    /// The A2A 0.1 JSON-RPC name, if 0.1 has the method.
    pub v01: Option<&'static str>,
    /// The answer is a stream of task events, not one result.
    pub streams: bool,
}

const TASK_ID: &str = "/tasks/{id:[^/:]+}";

impl Method {
    /// Every method, in the order the spec lists them.
    pub const ALL: [Method; 11] = [
        Method::SendMessage,
        Method::SendStreamingMessage,
        Method::GetTask,
        Method::ListTasks,
        Method::CancelTask,
        Method::SubscribeToTask,
        Method::CreateTaskPushNotificationConfig,
        Method::GetTaskPushNotificationConfig,
        Method::ListTaskPushNotificationConfigs,
        Method::DeleteTaskPushNotificationConfig,
        Method::GetExtendedAgentCard,
    ];

    /// The table itself.
    pub const fn info(self) -> MethodInfo {
        const CONFIGS: &str = "/tasks/{taskId:[^/:]+}/pushNotificationConfigs";
        const CONFIG: &str = "/tasks/{taskId:[^/:]+}/pushNotificationConfigs/{id}";
        let (name, rest, v03, v01, streams): (_, &'static [(&'static str, &'static str)], _, _, _) = match self {
            Method::SendMessage => {
                ("SendMessage", &[("POST", "/message:send")], Some("message/send"), Some("tasks/send"), false)
            }
            Method::SendStreamingMessage => (
                "SendStreamingMessage",
                &[("POST", "/message:stream")],
                Some("message/stream"),
                Some("tasks/sendSubscribe"),
                true,
            ),
            Method::GetTask => ("GetTask", &[("GET", TASK_ID)], Some("tasks/get"), Some("tasks/get"), false),
            Method::ListTasks => ("ListTasks", &[("GET", "/tasks")], None, None, false),
            Method::CancelTask => (
                "CancelTask",
                &[("POST", "/tasks/{id:[^/:]+}:cancel")],
                Some("tasks/cancel"),
                Some("tasks/cancel"),
                false,
            ),
            Method::SubscribeToTask => (
                "SubscribeToTask",
                &[("GET", "/tasks/{id:[^/:]+}:subscribe"), ("POST", "/tasks/{id:[^/:]+}:subscribe")],
                Some("tasks/resubscribe"),
                None,
                true,
            ),
            Method::CreateTaskPushNotificationConfig => (
                "CreateTaskPushNotificationConfig",
                &[("POST", CONFIGS)],
                Some("tasks/pushNotificationConfig/set"),
                None,
                false,
            ),
            Method::GetTaskPushNotificationConfig => (
                "GetTaskPushNotificationConfig",
                &[("GET", CONFIG)],
                Some("tasks/pushNotificationConfig/get"),
                None,
                false,
            ),
            Method::ListTaskPushNotificationConfigs => (
                "ListTaskPushNotificationConfigs",
                &[("GET", CONFIGS)],
                Some("tasks/pushNotificationConfig/list"),
                None,
                false,
            ),
            Method::DeleteTaskPushNotificationConfig => (
                "DeleteTaskPushNotificationConfig",
                &[("DELETE", CONFIG)],
                Some("tasks/pushNotificationConfig/delete"),
                None,
                false,
            ),
            Method::GetExtendedAgentCard => (
                "GetExtendedAgentCard",
                &[("GET", "/extendedAgentCard")],
                Some("agent/getAuthenticatedExtendedCard"),
                None,
                false,
            ),
        };
        MethodInfo { name, rest, v03, v01, streams }
    }

    /// The 1.0 name.
    pub const fn name(self) -> &'static str {
        self.info().name
    }

    /// The method of a 1.0 name (JSON-RPC `method`, gRPC RPC).
    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The method of a 0.3 JSON-RPC name (`message/send`, ...).
    pub fn from_v03(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.info().v03 == Some(name))
    }

    /// The method of a 0.1 JSON-RPC name (`tasks/send`, ...).
    pub fn from_v01(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.info().v01 == Some(name))
    }

    /// Whether `name` is a 0.1 name that 0.3 does not also use (`tasks/send`,
    /// `tasks/sendSubscribe`): such a request is 0.1 by its name alone. The shared ones
    /// (`tasks/get`, `tasks/cancel`) are 0.1 only for a 0.1 caller or task.
    pub fn is_v01_only(name: &str) -> bool {
        Method::from_v01(name).is_some_and(|m| m.info().v03 != Some(name))
    }

    /// `name` as a `&'static str` if it names a method in any dialect (1.0, 0.3, 0.1), for
    /// labels that must not grow with what clients send.
    pub fn known_name(name: &str) -> Option<&'static str> {
        Method::ALL
            .into_iter()
            .flat_map(|m| {
                let info = m.info();
                [Some(info.name), info.v03, info.v01]
            })
            .flatten()
            .find(|known| *known == name)
    }
}

#[cfg(test)]
mod tests {
    use super::Method;
    use std::collections::HashSet;

    #[test]
    fn every_name_names_one_method_in_its_dialect() {
        for method in Method::ALL {
            let info = method.info();
            assert_eq!(Method::from_name(info.name), Some(method));
            if let Some(v03) = info.v03 {
                assert_eq!(Method::from_v03(v03), Some(method));
            }
            if let Some(v01) = info.v01 {
                assert_eq!(Method::from_v01(v01), Some(method));
            }
            assert!(!info.rest.is_empty(), "{} has a REST route", info.name);
        }
        let routes: HashSet<_> = Method::ALL.iter().flat_map(|m| m.info().rest.iter()).collect();
        assert_eq!(routes.len(), 12, "no route serves two methods");
        assert!(Method::is_v01_only("tasks/send") && !Method::is_v01_only("tasks/get"));
        assert_eq!(Method::known_name("tasks/sendSubscribe"), Some("tasks/sendSubscribe"));
        assert_eq!(Method::known_name("tasks/explode"), None);
        assert_eq!(Method::from_name("message/send"), None, "1.0 names only");
    }
}

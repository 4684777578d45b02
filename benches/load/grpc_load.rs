//! `SendMessage` over gRPC with the generated tonic client: one HTTP/2 connection per
//! load connection, each sending one request at a time.

use crate::client::{new_histogram, LoadResult};
use a2a_pb::proto::{self, a2a_service_client::A2aServiceClient, part};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

fn request(conn: usize) -> proto::SendMessageRequest {
    proto::SendMessageRequest {
        message: Some(proto::Message {
            message_id: format!("m-{conn}"),
            context_id: format!("grpc-{conn}"),
            role: proto::Role::User as i32,
            parts: vec![proto::Part {
                content: Some(part::Content::Text("hello from the load driver".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub async fn run(addr: SocketAddr, connections: usize, warmup: Duration, duration: Duration) -> LoadResult {
    let measure_from = Instant::now() + warmup;
    let deadline = measure_from + duration;
    let tasks: Vec<_> = (0..connections)
        .map(|conn| {
            tokio::spawn(async move {
                let mut client = A2aServiceClient::connect(format!("http://{addr}")).await.expect("gRPC connect");
                let mut hist = new_histogram();
                let (mut requests, mut errors) = (0u64, 0u64);
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    let ok = client.send_message(request(conn)).await.is_ok();
                    if sent >= measure_from {
                        requests += 1;
                        errors += u64::from(!ok);
                        hist.record(sent.elapsed().as_micros() as u64).ok();
                    }
                }
                (requests, errors, hist)
            })
        })
        .collect();
    LoadResult::sum(tasks, duration).await
}

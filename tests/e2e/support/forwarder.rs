//! A TCP forwarder on loopback, standing for a stable address in front of a server that moves:
//! PostgreSQL restarted on another port, or a standby promoted in a primary's place. New
//! connections go to the current upstream; those already open stay where they are.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

use tokio::net::{TcpListener, TcpStream};

pub struct Forwarder {
    pub port: u16,
    upstream: Arc<AtomicU16>,
    task: tokio::task::JoinHandle<()>,
}

impl Forwarder {
    pub async fn start(upstream_port: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let upstream = Arc::new(AtomicU16::new(upstream_port));
        let target = upstream.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let port = target.load(Ordering::SeqCst);
                tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", port)).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Self {
            port,
            upstream,
            task,
        }
    }

    /// Sends new connections to `port` from now on.
    pub fn point_at(&self, port: u16) {
        self.upstream.store(port, Ordering::SeqCst);
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

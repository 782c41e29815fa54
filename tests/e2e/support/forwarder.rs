//! A TCP forwarder on loopback, standing for a stable address in front of a server that moves:
//! PostgreSQL restarted on another port, or a standby promoted in a primary's place. New
//! connections go to the current upstream; those already open stay where they are. It can
//! also stand for a network that goes away (a phone in a dead zone): [`Forwarder::cut`] drops
//! every connection and refuses new ones until [`Forwarder::restore`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Forwarder {
    pub port: u16,
    upstream: Arc<AtomicU16>,
    connected: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Forwarder {
    pub async fn start(upstream_port: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let upstream = Arc::new(AtomicU16::new(upstream_port));
        let target = upstream.clone();
        let (connected, watching) = watch::channel(true);
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !*watching.borrow() {
                    continue;
                }
                let port = target.load(Ordering::SeqCst);
                let mut watching = watching.clone();
                tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", port)).await {
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                            _ = watching.wait_for(|up| !up) => {}
                        }
                    }
                });
            }
        });
        Self {
            port,
            upstream,
            connected,
            task,
        }
    }

    /// Sends new connections to `port` from now on.
    pub fn point_at(&self, port: u16) {
        self.upstream.store(port, Ordering::SeqCst);
    }

    /// The network is gone: open connections are dropped, new ones closed at once.
    pub fn cut(&self) {
        self.connected.send_replace(false);
    }

    /// The network is back.
    pub fn restore(&self) {
        self.connected.send_replace(true);
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

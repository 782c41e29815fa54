//! One LISTEN connection per process. Features subscribe to their channels before it starts;
//! it relays each notification to the channel's subscribers, reconnects by itself, and tells
//! every subscriber when notifications may have been missed (while reconnecting), so each can
//! catch up its own way. It stops with the workers, and its subscribers' streams end then.

use std::collections::HashMap;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use crate::infra::workers::Workers;

/// What a subscriber hears.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// A notification on the channel, with its payload.
    Payload(String),
    /// The connection was lost and re-established: notifications may have been missed.
    Missed,
}

/// One subscriber: a stream, or a quick call made in the relay itself (no task to wake).
enum Subscriber {
    Stream(UnboundedSender<Notice>),
    Call(Box<dyn Fn(Notice) + Send + Sync>),
}

impl Subscriber {
    fn tell(&self, notice: Notice) {
        match self {
            Subscriber::Stream(sender) => {
                let _ = sender.send(notice);
            }
            Subscriber::Call(call) => call(notice),
        }
    }
}

/// The channels of one process and their subscribers, until [`ListenHub::start`].
pub struct ListenHub {
    pool: PgPool,
    subscribers: HashMap<&'static str, Vec<Subscriber>>,
}

impl ListenHub {
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            subscribers: HashMap::new(),
        }
    }

    /// What is notified on `channel` from the start on.
    pub fn subscribe(&mut self, channel: &'static str) -> UnboundedReceiver<Notice> {
        let (sender, receiver) = unbounded_channel();
        self.add(channel, Subscriber::Stream(sender));
        receiver
    }

    /// Calls `call` with each notice on `channel`, from the relay: for what is quick and never
    /// waits (waking a task), so a notice reaches it without a task switch in between.
    pub fn on(&mut self, channel: &'static str, call: impl Fn(Notice) + Send + Sync + 'static) {
        self.add(channel, Subscriber::Call(Box::new(call)));
    }

    fn add(&mut self, channel: &'static str, subscriber: Subscriber) {
        self.subscribers
            .entry(channel)
            .or_default()
            .push(subscriber);
    }

    /// Listens on every subscribed channel, then relays until the workers stop. Answers once
    /// the channels are listened to: nothing notified after that is missed.
    pub async fn start(self, workers: &Workers) -> Result<(), sqlx::Error> {
        let mut listener = PgListener::connect_with(&self.pool).await?;
        listener
            .listen_all(self.subscribers.keys().copied())
            .await?;
        workers.spawn(move |stop| self.relay(listener, stop));
        Ok(())
    }

    async fn relay(self, mut listener: PgListener, stop: CancellationToken) {
        loop {
            let received = tokio::select! {
                () = stop.cancelled() => return,
                received = listener.try_recv() => received,
            };
            match received {
                Ok(Some(notification)) => {
                    let notice = Notice::Payload(notification.payload().to_owned());
                    for subscriber in self
                        .subscribers
                        .get(notification.channel())
                        .into_iter()
                        .flatten()
                    {
                        subscriber.tell(notice.clone());
                    }
                }
                // Re-established: the listener listens again by itself.
                Ok(None) => self.tell_everyone(Notice::Missed),
                Err(error) => {
                    tracing::warn!(%error, "listening for notifications failed; retrying");
                    self.tell_everyone(Notice::Missed);
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                }
            }
        }
    }

    fn tell_everyone(&self, notice: Notice) {
        for subscriber in self.subscribers.values().flatten() {
            subscriber.tell(notice.clone());
        }
    }
}

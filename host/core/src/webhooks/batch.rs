//! Group commit: callers hand in one item each and wait; one task runs the items gathered
//! while its previous run was under way as a single statement. A lone caller waits for
//! nobody, and under load one statement serves many callers.

use std::future::Future;

use tokio::sync::{mpsc, oneshot};

/// Most items in one run.
const MOST: usize = 512;

type Pending<I, O> = (I, oneshot::Sender<Option<O>>);

/// Runs items of type `I` in batches, each caller receiving its own `O`.
pub struct Batcher<I, O> {
    sender: mpsc::UnboundedSender<Pending<I, O>>,
}

impl<I, O> Clone for Batcher<I, O> {
    fn clone(&self) -> Self {
        Self {
            sender: self.sender.clone(),
        }
    }
}

impl<I: Send + 'static, O: Send + 'static> Batcher<I, O> {
    /// Starts the task that runs batches with `run`, which answers each item, in order, or
    /// fails the whole batch (each caller then receives None). The task ends once every
    /// handle is dropped.
    pub fn start<F, Fut>(run: F) -> Self
    where
        F: Fn(Vec<I>) -> Fut + Send + 'static,
        Fut: Future<Output = Option<Vec<O>>> + Send,
    {
        let (sender, mut receiver) = mpsc::unbounded_channel::<Pending<I, O>>();
        tokio::spawn(async move {
            let mut gathered = Vec::new();
            while receiver.recv_many(&mut gathered, MOST).await > 0 {
                let (items, replies): (Vec<I>, Vec<_>) = gathered.drain(..).unzip();
                match run(items).await {
                    Some(outputs) => {
                        for (reply, output) in replies.into_iter().zip(outputs) {
                            let _ = reply.send(Some(output));
                        }
                    }
                    None => {
                        for reply in replies {
                            let _ = reply.send(None);
                        }
                    }
                }
            }
        });
        Self { sender }
    }

    /// Runs `item` with whatever else is waiting; None when its batch failed.
    pub async fn run(&self, item: I) -> Option<O> {
        let (reply, answer) = oneshot::channel();
        self.sender.send((item, reply)).ok()?;
        answer.await.ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn callers_waiting_together_share_one_run_and_get_their_own_answers() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        let batcher = Batcher::start(move |items: Vec<u32>| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Some(items.into_iter().map(|n| n * 2).collect::<Vec<_>>())
            }
        });
        assert_eq!(batcher.run(1).await, Some(2));
        let answers = futures_join((0..50).map(|n| {
            let batcher = batcher.clone();
            async move { batcher.run(n).await }
        }))
        .await;
        assert_eq!(answers, (0..50).map(|n| Some(n * 2)).collect::<Vec<_>>());
        // One run for the lone caller; the fifty shared at most a few.
        assert!(runs.load(Ordering::SeqCst) <= 3, "{runs:?}");
    }

    #[tokio::test]
    async fn a_failed_run_answers_none_to_each_of_its_callers() {
        let batcher = Batcher::start(|_: Vec<u32>| async { None::<Vec<u32>> });
        assert_eq!(batcher.run(7).await, None);
    }

    async fn futures_join<F: Future<Output = Option<u32>> + Send + 'static>(
        futures: impl Iterator<Item = F>,
    ) -> Vec<Option<u32>> {
        let tasks: Vec<_> = futures.map(tokio::spawn).collect();
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(task.await.unwrap());
        }
        answers
    }
}

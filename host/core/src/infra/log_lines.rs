//! Log lines gathered in memory and written out by a thread of their own, a few milliseconds'
//! worth at a time. A request appends its line under a lock and goes on. The first line after
//! a write wakes the writer, which gathers for 5 ms and writes all the lines in one system
//! call; the others wake nothing (a channel to a sleeping writer wakes it for every line).
//! With nothing to write, the writer sleeps.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// How long the writer gathers lines after the first before writing them out.
const WRITE_EVERY: Duration = Duration::from_millis(5);

/// The lines' destination for `tracing_subscriber`.
#[derive(Clone)]
pub struct LogLines {
    shared: Arc<Shared>,
}

/// Stops the writer when dropped, after it has written every line gathered.
pub struct LogLinesWriter {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the writer: for the first line since its last write, to stop, or because the
    /// lines reached their limit.
    wake: Condvar,
    /// Wakes the loggers waiting for room.
    room: Condvar,
    most_pending: usize,
}

struct State {
    pending: Vec<u8>,
    stopping: bool,
}

impl LogLines {
    /// Starts the writer thread `name`, writing to `out`. A logger finding `most_pending`
    /// bytes not yet written waits until the writer has taken them: nothing is dropped.
    pub fn start(
        name: &str,
        mut out: impl Write + Send + 'static,
        most_pending: usize,
    ) -> std::io::Result<(LogLines, LogLinesWriter)> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pending: Vec::new(),
                stopping: false,
            }),
            wake: Condvar::new(),
            room: Condvar::new(),
            most_pending,
        });
        let writer_side = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let mut batch = Vec::new();
                loop {
                    let stopping = {
                        let mut state = writer_side.lock();
                        // Asleep while there is nothing to write; then gathering for a while.
                        while state.pending.is_empty() && !state.stopping {
                            state = writer_side
                                .wake
                                .wait(state)
                                .unwrap_or_else(PoisonError::into_inner);
                        }
                        if !state.stopping && state.pending.len() < writer_side.most_pending {
                            state = writer_side
                                .wake
                                .wait_timeout(state, WRITE_EVERY)
                                .unwrap_or_else(PoisonError::into_inner)
                                .0;
                        }
                        std::mem::swap(&mut batch, &mut state.pending);
                        state.stopping
                    };
                    writer_side.room.notify_all();
                    if !batch.is_empty() {
                        // A log that cannot be written has nowhere to say so.
                        let _ = out.write_all(&batch).and_then(|()| out.flush());
                        batch.clear();
                    }
                    if stopping {
                        return;
                    }
                }
            })?;
        let writer = LogLinesWriter {
            shared: Arc::clone(&shared),
            thread: Some(thread),
        };
        Ok((LogLines { shared }, writer))
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for LogLinesWriter {
    fn drop(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One log line's writer: each `write` appends to the lines gathered.
pub struct LineSink<'a>(&'a Shared);

impl Write for LineSink<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let shared = self.0;
        let mut state = shared.lock();
        while state.pending.len() >= shared.most_pending && !state.stopping {
            shared.wake.notify_all();
            state = shared
                .room
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let first = state.pending.is_empty();
        state.pending.extend_from_slice(bytes);
        drop(state);
        // Only the first line since the last write wakes the writer: the others find it
        // gathering.
        if first {
            shared.wake.notify_one();
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for LogLines {
    type Writer = LineSink<'a>;

    fn make_writer(&'a self) -> LineSink<'a> {
        LineSink(&self.shared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output the test can read afterwards.
    #[derive(Clone, Default)]
    struct Collected(Arc<Mutex<Vec<u8>>>);

    impl Write for Collected {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_is_written_in_order_by_the_time_the_writer_stops() {
        let out = Collected::default();
        // A limit of 64 bytes: loggers wait for room again and again, and nothing is lost.
        let (lines, writer) = LogLines::start("test-log", out.clone(), 64).unwrap();
        let loggers: Vec<_> = (0..4)
            .map(|logger| {
                let lines = lines.clone();
                std::thread::spawn(move || {
                    for n in 0..500 {
                        let line = format!("{logger} {n}\n");
                        lines.make_writer().write_all(line.as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for logger in loggers {
            logger.join().unwrap();
        }
        drop(writer);
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        for logger in 0..4 {
            let numbers: Vec<usize> = text
                .lines()
                .filter_map(|line| line.split_once(' '))
                .filter(|(who, _)| *who == logger.to_string())
                .map(|(_, n)| n.parse().unwrap())
                .collect();
            assert_eq!(numbers, (0..500).collect::<Vec<_>>(), "logger {logger}");
        }
    }

    #[test]
    fn lines_are_written_without_the_writer_stopping() {
        let out = Collected::default();
        let (lines, _writer) = LogLines::start("test-log", out.clone(), 1 << 20).unwrap();
        writeln!(lines.make_writer(), "hello").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while out.0.lock().unwrap().is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "the line was never written"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(&out.0.lock().unwrap()[..], b"hello\n");
    }
}

//! A local stand-in for an SMTP relay, speaking the protocol as RFC 5321 has it: the greeting,
//! `EHLO`/`HELO`, `MAIL FROM`, `RCPT TO`, `DATA` ending at a line holding one dot (with dot
//! stuffing undone), `RSET`, `NOOP`, `QUIT`. It keeps every message it accepts; told to, it
//! answers `DATA` with a temporary failure (451) instead, as a relay that is struggling does.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// A message the stand-in accepted.
#[derive(Clone, Debug)]
pub struct Received {
    pub from: String,
    pub to: Vec<String>,
    /// The message as sent: headers, a blank line, the body.
    pub data: String,
}

impl Received {
    /// The value of header `name` (first occurrence), unfolded (RFC 5322 section 2.2.3: a
    /// long header goes on over lines that start with white space).
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\r\n\r\n").next().unwrap_or_default();
        let head = head.replace("\r\n ", " ").replace("\r\n\t", "\t");
        head.split("\r\n").find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    }

    /// The body, its quoted-printable soft line breaks joined.
    pub fn body(&self) -> String {
        let body = self
            .data
            .split_once("\r\n\r\n")
            .map(|(_, b)| b)
            .unwrap_or("");
        body.replace("=\r\n", "").replace("=3D", "=")
    }
}

#[derive(Default)]
struct State {
    received: Vec<Received>,
    refusing: bool,
}

pub struct SmtpStandIn {
    pub port: u16,
    state: Arc<Mutex<State>>,
}

impl SmtpStandIn {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(session(stream, Arc::clone(&shared)));
            }
        });
        Self { port, state }
    }

    /// `COURIER_SMTP_URL` for a service to send through it.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Every message accepted so far.
    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// Answers `DATA` with 451 (try again later) while `refusing`.
    pub fn refuse(&self, refusing: bool) {
        self.state.lock().unwrap().refusing = refusing;
    }
}

async fn session(stream: tokio::net::TcpStream, state: Arc<Mutex<State>>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    let reply = async |write: &mut tokio::net::tcp::OwnedWriteHalf, text: &str| {
        write
            .write_all(format!("{text}\r\n").as_bytes())
            .await
            .is_ok()
    };
    if !reply(&mut write, "220 stand-in.invalid ESMTP").await {
        return;
    }
    let (mut from, mut to) = (String::new(), Vec::new());
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let command = line.trim_end().to_owned();
        let verb = command
            .split([' ', ':'])
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        let answer = match verb.as_str() {
            "EHLO" => "250-stand-in.invalid\r\n250-8BITMIME\r\n250 SMTPUTF8".to_owned(),
            "HELO" | "NOOP" => "250 OK".to_owned(),
            "MAIL" => {
                from = address(&command);
                to.clear();
                "250 OK".to_owned()
            }
            "RCPT" => {
                to.push(address(&command));
                "250 OK".to_owned()
            }
            "RSET" => {
                from.clear();
                to.clear();
                "250 OK".to_owned()
            }
            "DATA" if to.is_empty() => "503 no recipients".to_owned(),
            "DATA" => {
                if !reply(&mut write, "354 end with <CRLF>.<CRLF>").await {
                    return;
                }
                let mut data = String::new();
                loop {
                    line.clear();
                    if lines.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    if line == ".\r\n" {
                        break;
                    }
                    let unstuffed = line.strip_prefix('.').unwrap_or(&line);
                    data.push_str(unstuffed);
                }
                let mut state = state.lock().unwrap();
                if state.refusing {
                    "451 try again later".to_owned()
                } else {
                    state.received.push(Received {
                        from: from.clone(),
                        to: std::mem::take(&mut to),
                        data,
                    });
                    "250 accepted".to_owned()
                }
            }
            "QUIT" => {
                reply(&mut write, "221 bye").await;
                return;
            }
            _ => "502 not implemented".to_owned(),
        };
        if !reply(&mut write, &answer).await {
            return;
        }
    }
}

/// The address of `MAIL FROM:<a>` or `RCPT TO:<a>`.
fn address(command: &str) -> String {
    command
        .split_once('<')
        .and_then(|(_, rest)| rest.split_once('>'))
        .map(|(address, _)| address.to_owned())
        .unwrap_or_default()
}

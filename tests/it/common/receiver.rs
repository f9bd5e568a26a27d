//! A webhook receiver on loopback: a tiny HTTP/1.1 server that records every `POST` and
//! answers the n-th (0-based, in the order they arrive) with `answer(n)`, one connection per
//! request, each on a thread of its own so that slow senders do not hold up the rest.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::Value;

/// One request the receiver got, and what it answered.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
    pub answered: u16,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str).trim()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

type Log = Arc<(Mutex<Vec<Received>>, Condvar)>;

pub struct Receiver {
    port: u16,
    received: Log,
}

impl Receiver {
    pub fn start(answer: impl Fn(usize) -> u16 + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let port = listener.local_addr().expect("receiver address").port();
        let received: Log = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        let (sink, answer) = (received.clone(), Arc::new(answer));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (sink, answer) = (sink.clone(), answer.clone());
                std::thread::spawn(move || respond(stream, &sink, &*answer));
            }
        });
        Self { port, received }
    }

    pub fn url(&self, host: &str) -> String {
        format!("http://{host}:{}/hooks/bindery?source=test", self.port)
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.0.lock().expect("receiver lock").clone()
    }

    /// Waits until at least `n` requests have arrived, and returns them all.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> Vec<Received> {
        let (lock, cvar) = &*self.received;
        let guard = lock.lock().expect("receiver lock");
        let (guard, _) = cvar
            .wait_timeout_while(guard, timeout, |log| log.len() < n)
            .expect("receiver lock");
        assert!(
            guard.len() >= n,
            "the receiver got {} requests within {timeout:?}, expected {n}: {:#?}",
            guard.len(),
            *guard
        );
        guard.clone()
    }
}

fn respond(mut stream: TcpStream, sink: &Log, answer: &dyn Fn(usize) -> u16) {
    let Some((headers, body)) = read_request(&stream) else {
        return;
    };
    let (lock, cvar) = &**sink;
    // Held while answering, so that `answer(n)` sees requests in the order they are recorded.
    let mut log = lock.lock().expect("receiver lock");
    let status = answer(log.len());
    let text = if status == 200 {
        "ok"
    } else {
        "receiver not ready"
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.flush();
    log.push(Received {
        headers,
        body,
        answered: status,
    });
    cvar.notify_all();
}

fn read_request(stream: &TcpStream) -> Option<(BTreeMap<String, String>, Vec<u8>)> {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    if !line.starts_with("POST ") {
        return None;
    }
    let mut headers = BTreeMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.insert(name.to_ascii_lowercase(), value.trim().to_owned());
    }
    let length: usize = headers.get("content-length")?.parse().ok()?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((headers, body))
}

//! A TCP proxy in front of a server (PostgreSQL, Azurite) that can be stopped and started again
//! on the same port, as a dependency that goes away and comes back is: while stopped, every
//! open connection is cut and new ones are refused. It can also cut each new connection as soon
//! as it is made, as a server that is shutting down or starting up does, or answer every HTTP
//! request itself with an error status, as a store that is overloaded (or a load balancer that
//! lost it) does.

use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub struct Proxy {
    pub addr: SocketAddr,
    target: SocketAddr,
    stopped: Arc<AtomicBool>,
    cutting: Arc<AtomicBool>,
    answering: Arc<Mutex<Option<&'static str>>>,
    sockets: Arc<Mutex<Vec<TcpStream>>>,
    accepting: Option<JoinHandle<()>>,
}

impl Proxy {
    /// A proxy to `target` on a free loopback port.
    pub fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut proxy = Self {
            addr: listener.local_addr().expect("address"),
            target,
            stopped: Arc::default(),
            cutting: Arc::default(),
            answering: Arc::default(),
            sockets: Arc::default(),
            accepting: None,
        };
        proxy.accept(listener);
        proxy
    }

    /// A proxy to the host and port of `url`, and `url` with the proxy's port instead.
    pub fn to_url(url: &str) -> (Self, url::Url) {
        let direct = url::Url::parse(url).expect("URL");
        let target = std::net::ToSocketAddrs::to_socket_addrs(&(
            direct.host_str().expect("host"),
            direct.port_or_known_default().expect("port"),
        ))
        .expect("resolve")
        .next()
        .expect("an address");
        let proxy = Self::start(target);
        let mut proxied = direct;
        proxied.set_port(Some(proxy.addr.port())).expect("port");
        (proxy, proxied)
    }

    /// Closes every connection and stops listening: new ones are refused.
    pub fn stop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then drops the listener.
        let _ = TcpStream::connect(self.addr);
        if let Some(accepting) = self.accepting.take() {
            accepting.join().expect("the accepting thread");
        }
        for socket in self.sockets.lock().expect("sockets").drain(..) {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }

    /// While `on`, accepts new connections and closes them at once, unanswered.
    pub fn cut_new_connections(&self, on: bool) {
        self.cutting.store(on, Ordering::SeqCst);
    }

    /// While `Some`, answers every HTTP request on a new connection with this response (a
    /// whole response: status line, headers with `connection: close`, and body) instead of
    /// passing it on, and cuts the open connections now, so that clients' pooled connections
    /// come back through it.
    pub fn answer_with(&self, response: Option<&'static str>) {
        *self.answering.lock().expect("answering") = response;
        if response.is_some() {
            for socket in self.sockets.lock().expect("sockets").drain(..) {
                let _ = socket.shutdown(Shutdown::Both);
            }
        }
    }

    /// Listens again on the same port, after [`Proxy::stop`].
    pub fn resume(&mut self) {
        assert!(self.accepting.is_none(), "the proxy is running");
        // The standard library sets SO_REUSEADDR, so the port is free again at once.
        let listener = TcpListener::bind(self.addr).expect("bind the same port again");
        self.stopped = Arc::default();
        self.accept(listener);
    }

    fn accept(&mut self, listener: TcpListener) {
        let (stop, cutting) = (self.stopped.clone(), self.cutting.clone());
        let answering = self.answering.clone();
        let (open, target) = (self.sockets.clone(), self.target);
        self.accepting = Some(std::thread::spawn(move || {
            for client in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                if cutting.load(Ordering::SeqCst) {
                    continue;
                }
                let answer = *answering.lock().expect("answering");
                if let (Some(response), Ok(client)) = (answer, &client) {
                    let client = client.try_clone().expect("clone");
                    std::thread::spawn(move || answer_once(client, response));
                    continue;
                }
                let (Ok(client), Ok(server)) = (client, TcpStream::connect(target)) else {
                    continue;
                };
                let mut open = open.lock().expect("sockets");
                for (mut from, mut to) in [
                    (client.try_clone(), server.try_clone()),
                    (server.try_clone(), client.try_clone()),
                ]
                .map(|(a, b)| (a.expect("clone"), b.expect("clone")))
                {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
                open.extend([client, server]);
            }
        }));
    }
}

/// Answers the request on `client` with `response` (which says `connection: close`) once the
/// client has sent it (a request and any body: until it pauses), and closes the connection.
fn answer_once(mut client: TcpStream, response: &'static str) {
    use std::io::{Read, Write};
    let _ = client.set_read_timeout(Some(std::time::Duration::from_millis(50)));
    let mut buffer = [0u8; 64 * 1024];
    let mut read = false;
    loop {
        match client.read(&mut buffer) {
            Ok(0) => return,
            Ok(_) => read = true,
            Err(e)
                if read
                    && matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
            {
                break;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
    let _ = client.write_all(response.as_bytes());
    let _ = client.shutdown(Shutdown::Both);
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

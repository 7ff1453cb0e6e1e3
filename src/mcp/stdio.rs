//! stdio: bounded request lines in, replies serialized straight to stdout.
//!
//! Owns: the session over stdin and stdout. [`serve`] runs a whole session
//! and owns both threads' lives: it starts the reader (`read`) and the
//! writer (`write`), serves, stops the runtime, and only then waits for
//! every queued reply to be written, so no caller has a shutdown step to
//! remember. The transport rmcp's service loop sees (`Stdio`) is here too:
//! messages from the reader thread in, replies to the writer thread out.
//!
//! Reading: one thread reads stdin with blocking `read(2)` (tokio's stdin
//! hands each read to its blocking pool and back, two thread hand-offs per
//! read). Each line is read with at most `max` bytes kept (rmcp's own
//! reader drops an oversized line without a reply, and its writer locks per
//! message, so tuls keeps this one). A longer line is discarded, never
//! buffered past the bound, and answered with a JSON-RPC error at the
//! request's top-level `id` when its first bytes show one, else at `id:
//! null`. A line that is not JSON gets `-32700 Parse error` and one that is
//! JSON but no JSON-RPC message tuls reads gets `-32600 Invalid Request`
//! (see `not_a_message`); the session goes on. Before each line, the
//! reader waits for a call slot and free reply budget ([`super::flow`]).
//! Each message is shown to an observer in wire order before it is handed
//! on (client roots use it; see [`super::roots::ClientRoots::observe`]).
//! Then every message goes to the call lifecycle ([`super::call`]): a
//! `tools/call` is run and answered there; every other message goes on to
//! rmcp's service loop through a short queue (the reader waits when it is
//! full, so rmcp's pace bounds what is read).
//!
//! Writing: one writer thread serializes each message directly into a
//! buffered, locked stdout, so a 20 MiB reply is never copied into a second
//! whole-message buffer, and flushes when its queue runs dry. A successful
//! tool result gets its `structuredContent` written from its one content
//! block ([`super::reply::mirrors`]), so the text is held once; a large
//! text is escaped once and written twice (`splice`).
//! May touch: stdin and stdout.

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt};
use std::sync::Arc;

use super::call::Calls;
use super::flow::Held;
use super::lines::LineReader;
use super::out::Out;
use super::server::Server;

mod frame;
mod read;
mod splice;
mod write;

use read::{RawStdin, Reader};
pub use write::Hooks;

/// Messages queued for the writer thread before `send` waits.
const WRITE_QUEUE: usize = 1024;

/// Messages read and parsed, queued for rmcp's service loop before the
/// reader waits.
const SERVICE_QUEUE: usize = 16;

/// Serves one MCP session over stdin/stdout on `runtime`, with request
/// lines bounded to `max_request_bytes`, until the client goes away. Every
/// queued reply is written before this returns.
pub fn serve(
    runtime: tokio::runtime::Runtime,
    server: Server,
    max_request_bytes: usize,
    hooks: Hooks,
) -> Result<(), String> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Out>(WRITE_QUEUE);
    let spare = server.spare();
    let writer = std::thread::Builder::new()
        .name("tuls-stdout".to_owned())
        .spawn(move || write::write_loop(rx, hooks, spare))
        .map_err(|e| format!("cannot start the stdout writer: {e}"))?;
    let (to_service, from_reader) = tokio::sync::mpsc::channel(SERVICE_QUEUE);
    let calls = Arc::new(Calls::new(
        server.clone(),
        tx.downgrade(),
        runtime.handle().clone(),
    ));
    let roots = server.client_roots();
    let reader = Reader {
        lines: LineReader::new(RawStdin, max_request_bytes),
        max: max_request_bytes,
        flow: server.flow(),
        calls: calls.clone(),
        observe: Box::new({
            let roots = roots.clone();
            move |msg| roots.observe(msg)
        }),
        awaits_client: Box::new(move || roots.pending()),
        replies: tx.downgrade(),
        service: to_service,
        started: false,
        eras: Default::default(),
    };
    // Not joined: at the end of a session it may still be blocked reading
    // stdin, and the process exits under it.
    std::thread::Builder::new()
        .name("tuls-stdin".to_owned())
        .spawn(move || reader.run())
        .map_err(|e| format!("cannot start the stdin reader: {e}"))?;
    let transport = Stdio {
        calls,
        tx,
        from_reader,
    };
    let result = runtime.block_on(async move {
        let service = match server.serve(transport).await {
            Ok(service) => service,
            // stdin closed before a client said anything (Ctrl-D, or a
            // client that gave up): nothing went wrong.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(e.to_string()),
        };
        service.waiting().await.map_err(|e| e.to_string())?;
        Ok(())
    });
    // Stopping the runtime drops every sender of the queue; the writer then
    // writes out what is queued and ends.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    let _ = writer.join();
    result
}

/// The server side of stdio, as rmcp sees it: messages from the reader
/// thread in, replies to the writer thread out.
struct Stdio {
    /// Sees each reply ([`Calls::on_send`]).
    calls: Arc<Calls>,
    tx: tokio::sync::mpsc::Sender<Out>,
    from_reader: tokio::sync::mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
}

impl Transport<RoleServer> for Stdio {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let deliver = self.calls.on_send(&item);
        let tx = self.tx.clone();
        async move {
            if !deliver {
                return Ok(());
            }
            // rmcp's replies hold no reply budget (tool results are the
            // call lifecycle's).
            tx.send(Out::Message(item, Held::default()))
                .await
                .map_err(|_| {
                    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed")
                })
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // Cancel-safe: a message stays in the channel until taken.
        self.from_reader.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

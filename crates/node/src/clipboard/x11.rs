//! The X11 CLIPBOARD selection, spoken directly over x11rb (ICCCM §2.4-2.7).
//!
//! An X selection is not stored anywhere: it is a promise by the owning client to convert its
//! data on request, so it lives exactly as long as that client answers. Two halves:
//!
//! - [`read`]: a short-lived requestor on a connection of its own (asks `TARGETS`, then the best
//!   target, reads the property, `INCR` transfers included), every wait bounded by one deadline,
//!   every byte it keeps bounded by a cap (what lies beyond is counted, not kept).
//! - [`Owner`]: the node's long-lived owner, one thread per capability started on the first write
//!   and kept, that serves what was written until another program copies (`SelectionClear`) or
//!   the node drops the capability. Large data goes out in `INCR` chunks, one per deletion of the
//!   requestor's property, several requestors at once, each dropped when it stalls for as long
//!   as a call may wait.
//!
//! Blocking: run [`read`] and [`Owner::offer`] on the blocking pool.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read as _, Write as _};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use x11rb::connection::{Connection, RequestConnection as _};
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    Atom, AtomEnum, ChangeWindowAttributesAux, ConnectionExt as _, CreateWindowAux, EventMask, PropMode, Property,
    SELECTION_NOTIFY_EVENT, SelectionNotifyEvent, SelectionRequestEvent, Timestamp, Window, WindowClass,
};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;
use x11rb::{COPY_DEPTH_FROM_PARENT, COPY_FROM_PARENT, CURRENT_TIME, NONE};

use super::selection::{self, Content, Found, MAX_COUNTED_BYTES, MAX_OFFERED, ReadLimits, Reading, Transfer, Want};

type XError = Box<dyn std::error::Error + Send + Sync>;

x11rb::atom_manager! {
    Atoms: AtomsCookie {
        CLIPBOARD,
        TARGETS,
        TIMESTAMP,
        INCR,
        UTF8_STRING,
        TEXT,
        TEXT_PLAIN_UTF8: b"text/plain;charset=utf-8",
        TEXT_PLAIN: b"text/plain",
        IMAGE_PNG: b"image/png",
        // The property this node's windows receive conversions in.
        CLAWMCP_CLIPBOARD,
    }
}

/// Data larger than this goes out in `INCR` chunks of this size (and never more than the
/// server's request limit allows).
const CHUNK_BYTES: usize = 256 * 1024;
/// Incremental transfers served at once; a further large request is refused until one ends.
const MAX_TRANSFERS: usize = 8;
/// One X client: a connection and an unmapped window that receives conversions.
struct Client {
    conn: RustConnection,
    window: Window,
    atoms: Atoms,
}

impl Client {
    fn open(display: Option<&str>) -> Result<Client, String> {
        let (conn, screen) = x11rb::connect(display).map_err(|error| {
            format!(
                "cannot open the X display {} ({error})",
                display.map_or_else(|| "named by DISPLAY".to_owned(), |d| format!("`{d}`"))
            )
        })?;
        let failed = |error: &dyn std::fmt::Display| format!("the X server refused a clipboard window: {error}");
        let root = conn.setup().roots[screen].root;
        let window = conn.generate_id().map_err(|e| failed(&e))?;
        let aux = CreateWindowAux::new().event_mask(EventMask::PROPERTY_CHANGE);
        conn.create_window(
            COPY_DEPTH_FROM_PARENT,
            window,
            root,
            0,
            0,
            1,
            1,
            0,
            WindowClass::INPUT_OUTPUT,
            COPY_FROM_PARENT,
            &aux,
        )
        .map_err(|e| failed(&e))?;
        let atoms = Atoms::new(&conn).map_err(|e| failed(&e))?.reply().map_err(|e| failed(&e))?;
        Ok(Client { conn, window, atoms })
    }

    /// The next event, or `None` once `deadline` has passed.
    fn next_event(&self, deadline: Instant) -> Result<Option<Event>, XError> {
        loop {
            self.conn.flush()?;
            if let Some(event) = self.conn.poll_for_event()? {
                return Ok(Some(event));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            wait_readable(&self.conn, None, Some(left))?;
        }
    }
}

/// Waits until the X connection (or `wake`) has something to read, or `timeout` passes.
/// Returns whether `wake` is readable.
fn wait_readable(conn: &RustConnection, wake: Option<&UnixStream>, timeout: Option<Duration>) -> Result<bool, XError> {
    let mut fds = vec![PollFd::new(conn.stream().as_fd(), PollFlags::POLLIN)];
    if let Some(wake) = wake {
        fds.push(PollFd::new(wake.as_fd(), PollFlags::POLLIN));
    }
    // Rounded up, so a wait never ends just before its deadline and spins.
    let timeout = timeout.map_or(PollTimeout::NONE, |left| {
        PollTimeout::from(u16::try_from(left.as_millis().saturating_add(1)).unwrap_or(u16::MAX))
    });
    match poll(&mut fds, timeout) {
        Ok(_) | Err(Errno::EINTR) => {}
        Err(error) => return Err(error.into()),
    }
    Ok(fds.get(1).and_then(PollFd::revents).is_some_and(|events| !events.is_empty()))
}

/// What the clipboard holds, read from whichever program owns it (this node's [`Owner`]
/// included). Every wait ends by `limits.timeout`.
pub fn read(display: Option<&str>, want: Want, limits: ReadLimits) -> Result<Reading, String> {
    let deadline = Instant::now() + limits.timeout;
    let client = Client::open(display)?;
    read_with(&client, want, limits, deadline).map_err(|error| error.to_string())
}

fn read_with(client: &Client, want: Want, limits: ReadLimits, deadline: Instant) -> Result<Reading, XError> {
    let (conn, atoms) = (&client.conn, &client.atoms);
    let owner = conn.get_selection_owner(atoms.CLIPBOARD)?.reply()?.owner;
    if owner == NONE {
        return Ok(Reading { offered: None, found: Found::Empty });
    }
    let targets = match convert(client, atoms.TARGETS, 64 * 1024, &limits, deadline)? {
        // ATOM as ICCCM says; some older owners type the list TARGETS.
        Some((transfer, kind)) if kind == u32::from(AtomEnum::ATOM) || kind == atoms.TARGETS => Some(
            transfer
                .bytes
                .chunks_exact(4)
                .take(1024)
                .map(|atom| u32::from_ne_bytes([atom[0], atom[1], atom[2], atom[3]]))
                .collect::<Vec<Atom>>(),
        ),
        _ => None,
    };
    let offered = targets.as_ref().map(|targets| target_names(conn, targets)).transpose()?;
    let names = want.targets();
    let cookies: Vec<_> =
        names.iter().map(|name| conn.intern_atom(false, name.as_bytes())).collect::<Result<_, _>>()?;
    let mut wanted = Vec::with_capacity(names.len());
    for (name, cookie) in names.into_iter().zip(cookies) {
        wanted.push((name, cookie.reply()?.atom));
    }
    // An owner that does not answer TARGETS (old programs) is asked for the usual targets
    // blindly; otherwise only for what it offers.
    let candidates: Vec<(&str, Atom)> = match &targets {
        Some(targets) => wanted.into_iter().filter(|(_, atom)| targets.contains(atom)).collect(),
        None => wanted.into_iter().filter(|(name, _)| !matches!(*name, "TEXT" | "text/plain")).collect(),
    };
    for (name, atom) in candidates {
        if let Some((mut transfer, kind)) = convert(client, atom, limits.cap(name), &limits, deadline)? {
            transfer.latin1 = kind == u32::from(AtomEnum::STRING);
            let found = if name == selection::IMAGE_PNG { Found::Png(transfer) } else { Found::Text(transfer) };
            return Ok(Reading { offered, found });
        }
    }
    Ok(Reading { offered, found: Found::Nothing })
}

/// The names of `targets` a person would recognise (meta targets such as `TARGETS` left out).
fn target_names(conn: &RustConnection, targets: &[Atom]) -> Result<Vec<String>, XError> {
    let cookies: Vec<_> = targets.iter().map(|&atom| conn.get_atom_name(atom)).collect::<Result<_, _>>()?;
    let mut names = Vec::with_capacity(cookies.len());
    for cookie in cookies {
        let name = String::from_utf8_lossy(&cookie.reply()?.name).into_owned();
        if selection::shown(&name) && names.len() < MAX_OFFERED {
            names.push(name);
        }
    }
    Ok(names)
}

/// Asks the owner to convert the clipboard to `target` and reads the answer (keeping at most
/// `cap` bytes). `None` when the owner refuses that target. Returns the data's type too.
fn convert(
    client: &Client,
    target: Atom,
    cap: usize,
    limits: &ReadLimits,
    deadline: Instant,
) -> Result<Option<(Transfer, Atom)>, XError> {
    let (conn, atoms, window) = (&client.conn, &client.atoms, client.window);
    let timeout = limits.timeout;
    let property = atoms.CLAWMCP_CLIPBOARD;
    conn.delete_property(window, property)?;
    conn.convert_selection(window, atoms.CLIPBOARD, target, property, CURRENT_TIME)?;
    let notify = loop {
        match client.next_event(deadline)? {
            Some(Event::SelectionNotify(notify)) if notify.requestor == window => break notify,
            Some(_) => {}
            None => return Err(unanswered(conn, atoms, timeout)?.into()),
        }
    };
    if notify.property == NONE {
        return Ok(None);
    }
    let first = conn.get_property(false, window, property, AtomEnum::ANY, 0, words(cap))?.reply()?;
    if first.type_ != atoms.INCR {
        conn.delete_property(window, property)?;
        conn.flush()?;
        let total = u64::from(first.value_len) * u64::from(first.format / 8) + u64::from(first.bytes_after);
        let mut bytes = first.value;
        bytes.truncate(cap);
        return Ok(Some((Transfer { bytes, total, exact: true, latin1: false }, first.type_)));
    }
    // INCR: deleting the property asks for the first chunk; each chunk arrives as a new value,
    // and an empty one ends the transfer.
    conn.delete_property(window, property)?;
    let (mut bytes, mut total, mut kind) = (Vec::new(), 0u64, NONE);
    loop {
        let chunk_ready = loop {
            match client.next_event(deadline)? {
                Some(Event::PropertyNotify(event))
                    if event.window == window && event.atom == property && event.state == Property::NEW_VALUE =>
                {
                    break true;
                }
                Some(_) => {}
                None => break false,
            }
        };
        if !chunk_ready {
            if bytes.len() >= cap {
                // Everything kept arrived; only the count of the rest is cut short.
                return Ok(Some((Transfer { bytes, total, exact: false, latin1: false }, kind)));
            }
            return Err(format!(
                "the program that owns the clipboard stopped sending it after {total} bytes (within {} s); \
                 copy it again",
                timeout.as_secs_f32()
            )
            .into());
        }
        let room = cap - bytes.len();
        let chunk = conn.get_property(false, window, property, AtomEnum::ANY, 0, words(room))?.reply()?;
        conn.delete_property(window, property)?;
        let size = u64::from(chunk.value_len) * u64::from(chunk.format / 8) + u64::from(chunk.bytes_after);
        if size == 0 {
            conn.flush()?;
            return Ok(Some((Transfer { bytes, total, exact: true, latin1: false }, kind)));
        }
        kind = chunk.type_;
        total += size;
        bytes.extend_from_slice(&chunk.value[..chunk.value.len().min(room)]);
        if total > MAX_COUNTED_BYTES && bytes.len() >= cap {
            conn.flush()?;
            return Ok(Some((Transfer { bytes, total, exact: false, latin1: false }, kind)));
        }
    }
}

/// A `GetProperty` length in 32-bit units that covers `bytes` (one more byte tells whether
/// there is more).
fn words(bytes: usize) -> u32 {
    u32::try_from(bytes / 4 + 1).unwrap_or(u32::MAX)
}

/// The error for an owner that let the deadline pass, naming it so the user can find it.
fn unanswered(conn: &RustConnection, atoms: &Atoms, timeout: Duration) -> Result<String, XError> {
    let owner = conn.get_selection_owner(atoms.CLIPBOARD)?.reply()?.owner;
    Ok(format!(
        "the program that owns the clipboard (X window 0x{owner:x}) did not answer within {} s; it may be busy or \
         hung. Copy something again, or close that program",
        timeout.as_secs_f32()
    ))
}

/// The node's clipboard owner: one thread with its own X connection, started by the first
/// [`Owner::offer`] and kept (restarted only if it died, e.g. with the X server). Dropping the
/// owner ends the thread, and with its connection the selection.
pub struct Owner {
    display: Option<String>,
    /// How long a requestor may stall an incremental transfer before it is dropped.
    idle: Duration,
    running: Mutex<Option<Running>>,
}

struct Running {
    offers: mpsc::Sender<Offer>,
    /// One byte per offer wakes the thread's `poll`; closing it (drop) tells the thread to end.
    wake: UnixStream,
    thread: JoinHandle<()>,
}

struct Offer {
    content: Content,
    answer: mpsc::SyncSender<Result<(), String>>,
}

impl Owner {
    pub fn new(display: Option<String>, idle: Duration) -> Self {
        Owner { display, idle, running: Mutex::new(None) }
    }

    /// Makes `content` the clipboard's, served until another program copies or the owner is
    /// dropped. Waits at most `timeout` for the owner thread to confirm.
    pub fn offer(&self, content: Content, timeout: Duration) -> Result<(), String> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running.as_ref().is_none_or(|running| running.thread.is_finished()) {
            *running = Some(Running::start(self.display.as_deref(), self.idle)?);
        }
        let Some(current) = running.as_mut() else { unreachable!("started above") };
        let (answer, answered) = mpsc::sync_channel(1);
        let sent = current.offers.send(Offer { content, answer }).is_ok();
        // A full socket already holds a wake-up the thread has not read yet.
        let woken = match (&current.wake).write(&[1]) {
            Ok(_) => true,
            Err(error) => error.kind() == ErrorKind::WouldBlock,
        };
        if !(sent && woken) {
            *running = None;
            return Err("the clipboard owner had stopped; try again".into());
        }
        match answered.recv_timeout(timeout) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                Err(format!("the X server did not confirm the clipboard within {} s", timeout.as_secs_f32()))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                *running = None;
                Err("the clipboard owner stopped (the X server may have gone away); try again".into())
            }
        }
    }

    /// The serving thread, to prove it is one thread whatever the number of writes.
    #[cfg(test)]
    pub fn thread_id(&self) -> Option<std::thread::ThreadId> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.as_ref().map(|running| running.thread.thread().id())
    }
}

impl Running {
    fn start(display: Option<&str>, idle: Duration) -> Result<Running, String> {
        let client = Client::open(display)?;
        let chunk = CHUNK_BYTES.min(client.conn.maximum_request_bytes().saturating_sub(64));
        let (offers, received) = mpsc::channel();
        let (wake, woken) = UnixStream::pair().map_err(|e| format!("cannot make the clipboard owner's socket: {e}"))?;
        for socket in [&wake, &woken] {
            socket.set_nonblocking(true).map_err(|e| format!("cannot make the clipboard owner's socket: {e}"))?;
        }
        let mut server = Server { client, chunk, idle, held: None, transfers: Vec::new(), pending: VecDeque::new() };
        let thread = std::thread::Builder::new()
            .name("clawmcp-clipboard".into())
            .spawn(move || {
                if let Err(error) = server.run(&received, &woken) {
                    tracing::warn!(%error, "the clipboard owner stopped");
                }
            })
            .map_err(|e| format!("cannot start the clipboard owner: {e}"))?;
        Ok(Running { offers, wake, thread })
    }
}

/// What the owner holds.
struct Held {
    /// The data as served: UTF-8 text or PNG bytes.
    bytes: Arc<[u8]>,
    text: bool,
    /// The text as ISO 8859-1 (`STRING`), when every character has a Latin-1 code.
    latin1: Option<Arc<[u8]>>,
    /// When the node took the selection (requests from before are refused, as ICCCM asks).
    since: Timestamp,
}

/// One incremental transfer to a requestor.
struct Outgoing {
    requestor: Window,
    property: Atom,
    kind: Atom,
    data: Arc<[u8]>,
    /// Bytes sent so far; at `data.len()` the next deletion gets the empty chunk that ends it.
    sent: usize,
    idle_until: Instant,
}

struct Server {
    client: Client,
    chunk: usize,
    idle: Duration,
    held: Option<Held>,
    transfers: Vec<Outgoing>,
    /// Events read while waiting for something else, handled next.
    pending: VecDeque<Event>,
}

impl Server {
    fn run(&mut self, offers: &mpsc::Receiver<Offer>, wake: &UnixStream) -> Result<(), XError> {
        loop {
            loop {
                match offers.try_recv() {
                    Ok(offer) => {
                        let taken = self.take(offer.content).map_err(|error| error.to_string());
                        let _ = offer.answer.send(taken);
                    }
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => return Ok(()),
                }
            }
            while let Some(event) = self.pending.pop_front() {
                self.handle(event)?;
            }
            self.expire()?;
            // Handle everything already read before sleeping: poll(2) sees only the socket.
            loop {
                self.client.conn.flush()?;
                match self.client.conn.poll_for_event()? {
                    Some(event) => self.handle(event)?,
                    None => break,
                }
            }
            let next_expiry = self.transfers.iter().map(|t| t.idle_until).min();
            let timeout = next_expiry.map(|at| at.saturating_duration_since(Instant::now()));
            if wait_readable(&self.client.conn, Some(wake), timeout)? {
                let mut buffer = [0u8; 64];
                match (&*wake).read(&mut buffer) {
                    // The node dropped its owner: end, releasing the selection with the connection.
                    Ok(0) => return Ok(()),
                    Ok(_) => {}
                    Err(error) if error.kind() == ErrorKind::WouldBlock => {}
                    Err(error) => return Err(error.into()),
                }
            }
        }
    }

    /// Takes the selection for `content`.
    fn take(&mut self, content: Content) -> Result<(), XError> {
        let since = self.server_time()?;
        let (conn, atoms, window) = (&self.client.conn, &self.client.atoms, self.client.window);
        conn.set_selection_owner(window, atoms.CLIPBOARD, since)?;
        if conn.get_selection_owner(atoms.CLIPBOARD)?.reply()?.owner != window {
            return Err("another program took the clipboard at the same moment; try again".into());
        }
        self.held = Some(match content {
            Content::Text(text) => {
                let latin1 = text.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect::<Option<Vec<u8>>>();
                Held { bytes: text.into_bytes().into(), text: true, latin1: latin1.map(Into::into), since }
            }
            Content::Png(png) => Held { bytes: png.into(), text: false, latin1: None, since },
        });
        Ok(())
    }

    /// The X server's time now: a zero-length append to our window's property comes back as a
    /// PropertyNotify carrying it (ICCCM: never take a selection at CurrentTime).
    fn server_time(&mut self) -> Result<Timestamp, XError> {
        let (atoms, window) = (&self.client.atoms, self.client.window);
        self.client.conn.change_property8(PropMode::APPEND, window, atoms.CLAWMCP_CLIPBOARD, AtomEnum::STRING, &[])?;
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            match self.client.next_event(deadline)? {
                Some(Event::PropertyNotify(event))
                    if event.window == window && event.atom == atoms.CLAWMCP_CLIPBOARD =>
                {
                    return Ok(event.time);
                }
                Some(other) => self.pending.push_back(other),
                None => return Err("the X server did not answer a property change within 2 s".into()),
            }
        }
    }

    fn handle(&mut self, event: Event) -> Result<(), XError> {
        let (atoms, window) = (&self.client.atoms, self.client.window);
        match event {
            Event::SelectionRequest(request) => self.answer(request)?,
            Event::SelectionClear(clear) if clear.owner == window && clear.selection == atoms.CLIPBOARD => {
                tracing::info!("another program took the clipboard; the node's copy is released");
                self.held = None;
            }
            Event::PropertyNotify(event) if event.state == Property::DELETE => {
                self.next_chunk(event.window, event.atom)?;
            }
            // A requestor that went away mid-transfer (BadWindow on its window).
            Event::Error(error) => {
                tracing::debug!(?error, "X error while serving the clipboard");
                let gone = error.bad_value;
                self.transfers.retain(|transfer| transfer.requestor != gone);
            }
            _ => {}
        }
        Ok(())
    }

    fn answer(&mut self, request: SelectionRequestEvent) -> Result<(), XError> {
        // Obsolete requestors name no property: the target is used instead (ICCCM §2.2).
        let property = if request.property == NONE { request.target } else { request.property };
        let current = self.held.as_ref().is_some_and(|held| {
            request.selection == self.client.atoms.CLIPBOARD
                && (request.time == CURRENT_TIME || request.time >= held.since)
        });
        let granted = current && self.convert(request.requestor, property, request.target)?;
        let notify = SelectionNotifyEvent {
            response_type: SELECTION_NOTIFY_EVENT,
            sequence: 0,
            time: request.time,
            requestor: request.requestor,
            selection: request.selection,
            target: request.target,
            property: if granted { property } else { NONE },
        };
        self.client.conn.send_event(false, request.requestor, EventMask::NO_EVENT, notify)?;
        Ok(())
    }

    /// Writes the held data as `target` into the requestor's `property`; false if we have no
    /// such target (or too many transfers under way).
    fn convert(&mut self, requestor: Window, property: Atom, target: Atom) -> Result<bool, XError> {
        let Some(held) = &self.held else { return Ok(false) };
        let (conn, atoms) = (&self.client.conn, &self.client.atoms);
        let string = u32::from(AtomEnum::STRING);
        if target == atoms.TARGETS {
            let mut targets = vec![atoms.TARGETS, atoms.TIMESTAMP];
            match held.text {
                true => {
                    targets.extend([atoms.UTF8_STRING, atoms.TEXT_PLAIN_UTF8, atoms.TEXT, atoms.TEXT_PLAIN]);
                    targets.extend(held.latin1.as_ref().map(|_| string));
                }
                false => targets.push(atoms.IMAGE_PNG),
            }
            conn.change_property32(PropMode::REPLACE, requestor, property, AtomEnum::ATOM, &targets)?;
            return Ok(true);
        }
        if target == atoms.TIMESTAMP {
            conn.change_property32(PropMode::REPLACE, requestor, property, AtomEnum::INTEGER, &[held.since])?;
            return Ok(true);
        }
        let (kind, data) = match held.text {
            true if target == atoms.UTF8_STRING || target == atoms.TEXT => (atoms.UTF8_STRING, held.bytes.clone()),
            true if target == atoms.TEXT_PLAIN_UTF8 || target == atoms.TEXT_PLAIN => (target, held.bytes.clone()),
            true if target == string => match &held.latin1 {
                Some(latin1) => (string, latin1.clone()),
                None => return Ok(false),
            },
            false if target == atoms.IMAGE_PNG => (target, held.bytes.clone()),
            _ => return Ok(false),
        };
        self.send(requestor, property, kind, data)
    }

    fn send(&mut self, requestor: Window, property: Atom, kind: Atom, data: Arc<[u8]>) -> Result<bool, XError> {
        let conn = &self.client.conn;
        if data.len() <= self.chunk {
            conn.change_property8(PropMode::REPLACE, requestor, property, kind, &data)?;
            return Ok(true);
        }
        self.transfers.retain(|t| !(t.requestor == requestor && t.property == property));
        if self.transfers.len() >= MAX_TRANSFERS {
            tracing::warn!(requestor, "clipboard request refused: {MAX_TRANSFERS} large transfers are under way");
            return Ok(false);
        }
        // Watch the requestor's property for the deletions that ask for each chunk.
        let watch = ChangeWindowAttributesAux::new().event_mask(EventMask::PROPERTY_CHANGE);
        conn.change_window_attributes(requestor, &watch)?;
        let size = u32::try_from(data.len()).unwrap_or(u32::MAX);
        conn.change_property32(PropMode::REPLACE, requestor, property, self.client.atoms.INCR, &[size])?;
        self.transfers.push(Outgoing {
            requestor,
            property,
            kind,
            data,
            sent: 0,
            idle_until: Instant::now() + self.idle,
        });
        Ok(true)
    }

    /// The requestor deleted `property` on `window`: the next chunk of its transfer, if any.
    fn next_chunk(&mut self, window: Window, property: Atom) -> Result<(), XError> {
        let Some(at) = self.transfers.iter().position(|t| t.requestor == window && t.property == property) else {
            return Ok(());
        };
        let transfer = &mut self.transfers[at];
        let end = (transfer.sent + self.chunk).min(transfer.data.len());
        let chunk = &transfer.data[transfer.sent..end];
        self.client.conn.change_property8(PropMode::REPLACE, window, property, transfer.kind, chunk)?;
        if chunk.is_empty() {
            let done = self.transfers.swap_remove(at);
            self.unwatch(done.requestor)?;
        } else {
            transfer.sent = end;
            transfer.idle_until = Instant::now() + self.idle;
        }
        Ok(())
    }

    /// Drops transfers whose requestor stopped asking.
    fn expire(&mut self) -> Result<(), XError> {
        let now = Instant::now();
        let (stale, live): (Vec<Outgoing>, Vec<Outgoing>) =
            std::mem::take(&mut self.transfers).into_iter().partition(|t| t.idle_until <= now);
        self.transfers = live;
        for transfer in stale {
            tracing::warn!(requestor = transfer.requestor, sent = transfer.sent, "clipboard transfer abandoned");
            self.unwatch(transfer.requestor)?;
        }
        Ok(())
    }

    /// Stops watching `requestor`'s properties once no transfer to it is left (event masks are
    /// per client: this leaves the requestor's own mask alone).
    fn unwatch(&self, requestor: Window) -> Result<(), XError> {
        if self.transfers.iter().all(|t| t.requestor != requestor) {
            let quiet = ChangeWindowAttributesAux::new().event_mask(EventMask::NO_EVENT);
            self.client.conn.change_window_attributes(requestor, &quiet)?;
        }
        Ok(())
    }
}

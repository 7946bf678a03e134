//! `alwaysOnTop` for the canvas window, where the window manager allows it: an EWMH
//! `_NET_WM_STATE` request for `_NET_WM_STATE_ABOVE`, sent to the root window as the spec asks
//! (Chromium has no switch or DevTools command for it). Without a window manager, or with one that
//! does not list `_NET_WM_STATE_ABOVE` in `_NET_SUPPORTED`, there is nothing to ask and the window
//! stays as it is (`canvas.caps` says `alwaysOnTop: false`).

use std::time::{Duration, Instant};

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ClientMessageEvent, ConnectionExt, EventMask, Window};

/// How long the window manager may take to manage a new window.
const MANAGED_WITHIN: Duration = Duration::from_secs(3);

/// Atoms by name.
fn atom(conn: &impl Connection, name: &str) -> Result<u32, String> {
    let failed = |error: &dyn std::fmt::Display| format!("cannot intern {name}: {error}");
    Ok(conn.intern_atom(false, name.as_bytes()).map_err(|e| failed(&e))?.reply().map_err(|e| failed(&e))?.atom)
}

/// A window's 32-bit list property (`_NET_SUPPORTED`, `_NET_CLIENT_LIST`, `_NET_WM_PID`).
fn cardinals(conn: &impl Connection, window: Window, property: u32, kind: AtomEnum) -> Vec<u32> {
    conn.get_property(false, window, property, kind, 0, 4096)
        .ok()
        .and_then(|cookie| cookie.reply().ok())
        .and_then(|reply| reply.value32().map(Iterator::collect))
        .unwrap_or_default()
}

/// Whether the window manager on `display` honours `_NET_WM_STATE_ABOVE`.
pub fn supported(display: &str) -> bool {
    let Ok((conn, screen)) = x11rb::connect(Some(display)) else { return false };
    let root = conn.setup().roots[screen].root;
    let (Ok(supported), Ok(above)) = (atom(&conn, "_NET_SUPPORTED"), atom(&conn, "_NET_WM_STATE_ABOVE")) else {
        return false;
    };
    cardinals(&conn, root, supported, AtomEnum::ATOM).contains(&above)
}

/// Asks the window manager to keep the window of process `pid` above others (or not). `Ok(false)`
/// when the window manager does not offer it.
pub fn keep_above(display: &str, pid: u32, above: bool) -> Result<bool, String> {
    let (conn, screen) = x11rb::connect(Some(display)).map_err(|error| format!("cannot open {display}: {error}"))?;
    let root = conn.setup().roots[screen].root;
    let [supported, state, state_above, clients, wm_pid] =
        ["_NET_SUPPORTED", "_NET_WM_STATE", "_NET_WM_STATE_ABOVE", "_NET_CLIENT_LIST", "_NET_WM_PID"]
            .map(|name| atom(&conn, name));
    let (supported, state, state_above, clients, wm_pid) = (supported?, state?, state_above?, clients?, wm_pid?);
    if !cardinals(&conn, root, supported, AtomEnum::ATOM).contains(&state_above) {
        return Ok(false);
    }
    // The canvas's window: the managed client whose _NET_WM_PID is the browser's (Chromium sets it
    // on its windows), once the window manager lists it (waited for only to put it above).
    let deadline = Instant::now() + MANAGED_WITHIN;
    let window = loop {
        let found = cardinals(&conn, root, clients, AtomEnum::WINDOW)
            .into_iter()
            .find(|&window| cardinals(&conn, window, wm_pid, AtomEnum::CARDINAL).first() == Some(&pid));
        match found {
            Some(window) => break window,
            // Nothing to take back from a window that was never found.
            None if !above => return Ok(false),
            None if Instant::now() >= deadline => {
                return Err(format!("the window manager lists no window of the canvas browser (pid {pid})"));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    // EWMH: _NET_WM_STATE_REMOVE 0, _NET_WM_STATE_ADD 1; source indication 1 (an application).
    let action = u32::from(above);
    let event = ClientMessageEvent::new(32, window, state, [action, state_above, 0, 1, 0]);
    let mask = EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY;
    let failed = |error: &dyn std::fmt::Display| format!("cannot ask the window manager: {error}");
    // Asked again until the window's state says so: a request sent while Chromium is still
    // setting up a new window can be lost (its own state updates replace ours).
    let deadline = Instant::now() + MANAGED_WITHIN;
    loop {
        conn.send_event(false, root, mask, event).map_err(|e| failed(&e))?;
        conn.flush().map_err(|e| failed(&e))?;
        let asked = Instant::now() + Duration::from_millis(250);
        while Instant::now() < asked {
            if cardinals(&conn, window, state, AtomEnum::ATOM).contains(&state_above) == above {
                return Ok(true);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the window manager did not {} the canvas window within {} s",
                if above { "keep above others" } else { "stop keeping above others" },
                MANAGED_WITHIN.as_secs()
            ));
        }
    }
}

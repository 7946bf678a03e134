//! GeoClue2 on the system D-Bus (`org.freedesktop.GeoClue2`).
//!
//! The protocol ties the client object to the D-Bus connection that asked for it (GeoClue drops
//! the client when the connection closes), so one connection is kept for the node's life: the
//! first call connects, asks `Manager.GetClient` and sets `DesktopId`; every call then sets
//! `RequestedAccuracyLevel`, subscribes to the client's `LocationUpdated`, calls `Start`, reads
//! the `Location` object the signal names (`Latitude`, `Longitude`, `Accuracy`, `Timestamp`) and
//! calls `Stop`, so the GPS is not kept busy between calls. A call whose kept connection fails
//! (the bus or GeoClue restarted) connects once more. Every wait is bounded by the call's
//! deadline and stops at once when the call is cancelled.
//!
//! GeoClue hands a client out only after a location agent (GNOME Shell, KDE Plasma, or
//! `geoclue-demo-agent`) has registered for the caller's user and the agent (or
//! `/etc/geoclue/geoclue.conf`) allows the program: without an agent `GetClient` never answers,
//! which the time-out names.

use std::collections::HashMap;
use std::str::FromStr;

use futures_util::StreamExt;
use tokio::sync::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zbus::message::Type as MessageType;
use zbus::{Address, OwnedObjectPath, OwnedVariant, Variant};

use super::{Fix, LocateError};
use crate::availability::MissingBackend;

pub const SERVICE: &str = "org.freedesktop.GeoClue2";
/// `GClueAccuracyLevel`s.
pub const CITY: u32 = 4;
pub const EXACT: u32 = 8;
const MANAGER_PATH: &str = "/org/freedesktop/GeoClue2/Manager";
const MANAGER: &str = "org.freedesktop.GeoClue2.Manager";
const CLIENT: &str = "org.freedesktop.GeoClue2.Client";
const LOCATION: &str = "org.freedesktop.GeoClue2.Location";
const PROPERTIES: &str = "org.freedesktop.DBus.Properties";
/// The standard system bus socket (libdbus's default when `DBUS_SYSTEM_BUS_ADDRESS` is unset).
const SYSTEM_BUS: &str = "unix:path=/var/run/dbus/system_bus_socket";
/// What GeoClue's agent and configuration know this program as.
pub const DESKTOP_ID: &str = "clawmcp";
/// How long the availability probe waits for the bus.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);
/// How long `Stop` after a call may take (best effort).
const STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// The kept connection and its client object.
struct Session {
    connection: zbus::Connection,
    client: OwnedObjectPath,
    /// The Location object the last call answered from: the client's `Location` property may
    /// still name it after `Stop`, and it is not a new fix.
    answered: Option<OwnedObjectPath>,
}

/// GeoClue at one system bus address.
pub struct GeoClue {
    bus: Option<String>,
    session: Mutex<Option<Session>>,
}

/// How far a call got, for the time-out's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Connecting,
    GettingClient,
    Starting,
    WaitingForFix,
}

impl GeoClue {
    pub fn new(bus: Option<String>) -> Self {
        GeoClue { bus, session: Mutex::new(None) }
    }

    fn address_text(&self) -> String {
        self.bus
            .clone()
            .or_else(|| std::env::var("DBUS_SYSTEM_BUS_ADDRESS").ok().filter(|text| !text.is_empty()))
            .unwrap_or_else(|| SYSTEM_BUS.to_owned())
    }

    fn address(&self) -> Result<Address, String> {
        let text = self.address_text();
        Address::from_str(&text).map_err(|error| format!("`{text}` is not a D-Bus address ({error})"))
    }

    /// Whether the system bus has GeoClue (running, or activatable). Synchronous and bounded: it
    /// is an availability probe.
    pub fn probe(&self) -> Result<(), MissingBackend> {
        let no_bus = |what: String| {
            MissingBackend::new(what, "start the system bus (apt install dbus) or set DBUS_SYSTEM_BUS_ADDRESS")
        };
        let address = self.address().map_err(no_bus)?;
        let shown = self.address_text();
        match crate::dbus::block_on_bounded(PROBE_TIMEOUT, crate::dbus::service_on_bus(&address, SERVICE)) {
            Some(Ok(true)) => Ok(()),
            Some(Ok(false)) => Err(MissingBackend::new(
                format!("no GeoClue2 service on the system bus ({SERVICE} is neither running nor activatable)"),
                "apt install geoclue-2.0",
            )),
            // zbus's error names the address.
            Some(Err(error)) => Err(no_bus(format!("no system D-Bus for GeoClue ({error})"))),
            None => Err(no_bus(format!(
                "the system D-Bus at {shown} did not answer within {} ms",
                PROBE_TIMEOUT.as_millis()
            ))),
        }
    }

    /// One fix at GeoClue accuracy `level`, before `deadline` (`timeout_ms` is what the caller
    /// asked for, for the words of a time-out).
    pub async fn locate(
        &self,
        level: u32,
        deadline: Instant,
        timeout_ms: u128,
        cancel: &CancellationToken,
    ) -> Result<Fix, LocateError> {
        let mut stage = Stage::Connecting;
        let coarse = level < EXACT;
        let attempt = tokio::time::timeout_at(deadline, self.locate_on_session(level, &mut stage));
        let done = tokio::select! {
            () = cancel.cancelled() => None,
            done = attempt => Some(done),
        };
        let outcome = match done {
            None => Err(LocateError::Cancelled),
            Some(Ok(located)) => located,
            Some(Err(_)) => Err(LocateError::NotAvailable(timed_out(stage, timeout_ms, coarse))),
        };
        if outcome.is_err() {
            // Interrupted mid-call: stop the client (a pending Start or fix wait) so GeoClue does
            // not keep its sources running for nobody; if it never got a client, the connection
            // holds a pending GetClient and is dropped.
            if let Ok(mut session) = self.session.try_lock() {
                match (stage, session.as_ref()) {
                    (Stage::Connecting | Stage::GettingClient, _) => *session = None,
                    (_, Some(kept)) => {
                        let _ = tokio::time::timeout(STOP_TIMEOUT, stop(kept)).await;
                    }
                    (_, None) => {}
                }
            }
        }
        outcome
    }

    async fn locate_on_session(&self, level: u32, stage: &mut Stage) -> Result<Fix, LocateError> {
        let mut session = self.session.lock().await;
        let reused = session.is_some();
        for attempt in 0..2 {
            if session.is_none() {
                *stage = Stage::Connecting;
                *session = Some(self.connect(stage).await?);
            }
            let kept = session.as_mut().expect("connected above");
            match fix_on(kept, level, stage).await {
                Err(Broken::Bus(error)) if reused && attempt == 0 => {
                    tracing::info!(%error, "the kept GeoClue connection failed; connecting again");
                    *session = None;
                }
                Err(Broken::Bus(error)) => {
                    *session = None;
                    return Err(LocateError::Failed(format!("the GeoClue conversation failed: {error}")));
                }
                Err(Broken::Said(error)) => return Err(error),
                Ok(fix) => return Ok(fix),
            }
        }
        unreachable!("the second attempt returns")
    }

    async fn connect(&self, stage: &mut Stage) -> Result<Session, LocateError> {
        let address = self.address().map_err(LocateError::NotAvailable)?;
        let connection = zbus::connection::Builder::address(address).build().await.map_err(|error| {
            LocateError::NotAvailable(format!("cannot reach the system D-Bus at {} ({error})", self.address_text()))
        })?;
        *stage = Stage::GettingClient;
        let reply = connection
            .call_method(Some(SERVICE), MANAGER_PATH, Some(MANAGER), "GetClient", &())
            .await
            .map_err(|error| refused_or_failed("GetClient", error))?;
        let client: OwnedObjectPath = reply
            .body()
            .deserialize()
            .map_err(|error| LocateError::Failed(format!("GetClient answered oddly: {error}")))?;
        set_property(&connection, &client, "DesktopId", Variant::from(DESKTOP_ID))
            .await
            .map_err(|error| refused_or_failed("setting DesktopId", error))?;
        Ok(Session { connection, client, answered: None })
    }
}

/// What a timed-out call says, by how far it got.
fn timed_out(stage: Stage, timeout_ms: u128, coarse: bool) -> String {
    match stage {
        Stage::Connecting => format!("the system D-Bus did not answer within {timeout_ms} ms (locationTimeout)"),
        Stage::GettingClient => format!(
            "no client within {timeout_ms} ms (locationTimeout): GeoClue hands one out only once a location agent \
             for this user allows it, and none answered. Run one: your desktop's (GNOME Shell, KDE Plasma), or on a machine \
             without a desktop /usr/libexec/geoclue-2.0/demos/agent (in geoclue-2.0)"
        ),
        Stage::Starting => format!(
            "did not start locating within {timeout_ms} ms (locationTimeout): a permission dialog nobody \
             answered?"
        ),
        Stage::WaitingForFix if coarse => format!(
            "no fix within {timeout_ms} ms (locationTimeout) from GeoClue's city-level sources: accuracy coarse \
             leaves GPS and NMEA off, so on a machine with only those ask with accuracy default"
        ),
        Stage::WaitingForFix => format!(
            "no fix within {timeout_ms} ms (locationTimeout): none of its sources (GPS, Wi-Fi, cell, an \
             NMEA feed) has a position. Try again with a longer locationTimeout, or outdoors for GPS"
        ),
    }
}

/// How a step on a kept session failed: the bus broke (reconnect), or GeoClue said something.
enum Broken {
    Bus(zbus::Error),
    Said(LocateError),
}

/// The D-Bus error name of a method's error reply (zbus turns the standard names into
/// [`zbus::fdo::Error`]s, the others stay [`zbus::Error::MethodError`]).
fn error_name(error: &zbus::Error) -> Option<String> {
    use zbus::DBusError;
    match error {
        zbus::Error::MethodError(name, _, _) => Some(name.to_string()),
        zbus::Error::FDO(fdo) => Some(fdo.name().to_string()),
        _ => None,
    }
}

/// The text a D-Bus error reply carries (GeoClue's reason, e.g. "'clawmcp' disallowed by
/// configuration"). zbus maps the standard names to `Error::FDO`, whose own `description()`
/// is only "FDO error": the reason is the inner error's.
fn error_message(error: &zbus::Error) -> Option<String> {
    use zbus::DBusError;
    match error {
        zbus::Error::MethodError(_, message, _) => message.clone(),
        zbus::Error::FDO(fdo) => fdo.description().map(str::to_owned),
        _ => None,
    }
}

/// GeoClue's refusal (its agent or configuration) or a failure, from a method's error.
fn refused_or_failed(step: &str, error: zbus::Error) -> LocateError {
    match error_name(&error).as_deref() {
        Some("org.freedesktop.DBus.Error.AccessDenied") => {
            LocateError::Denied(error_message(&error).unwrap_or_else(|| format!("{step} was refused")))
        }
        Some("org.freedesktop.DBus.Error.ServiceUnknown") => {
            LocateError::NotAvailable(format!("GeoClue is not running and the system bus cannot start it ({error})"))
        }
        _ => LocateError::Failed(format!("{step} failed: {error}")),
    }
}

/// Whether an error on a kept connection means the connection (or GeoClue's client) is gone:
/// the bus dropped us, or GeoClue restarted and forgot the client.
fn broken(step: &str, error: zbus::Error) -> Broken {
    let gone = matches!(error, zbus::Error::InputOutput(_))
        || matches!(
            error_name(&error).as_deref(),
            Some(
                "org.freedesktop.DBus.Error.UnknownObject"
                    | "org.freedesktop.DBus.Error.UnknownMethod"
                    | "org.freedesktop.DBus.Error.ServiceUnknown"
                    | "org.freedesktop.DBus.Error.NoReply"
                    | "org.freedesktop.DBus.Error.Disconnected"
            )
        );
    match gone {
        true => Broken::Bus(error),
        false => Broken::Said(refused_or_failed(step, error)),
    }
}

async fn set_property(
    connection: &zbus::Connection,
    path: &OwnedObjectPath,
    name: &str,
    value: Variant<'_>,
) -> zbus::Result<()> {
    connection.call_method(Some(SERVICE), path, Some(PROPERTIES), "Set", &(CLIENT, name, value)).await.map(drop)
}

async fn properties(
    connection: &zbus::Connection,
    path: &OwnedObjectPath,
    interface: &str,
) -> zbus::Result<HashMap<String, OwnedVariant>> {
    let reply = connection.call_method(Some(SERVICE), path, Some(PROPERTIES), "GetAll", &(interface,)).await?;
    reply.body().deserialize()
}

async fn stop(session: &Session) {
    let _ = session.connection.call_method(Some(SERVICE), &session.client, Some(CLIENT), "Stop", &()).await;
}

/// One fix on a kept session: accuracy, subscribe, Start, the first LocationUpdated, Stop.
async fn fix_on(session: &mut Session, level: u32, stage: &mut Stage) -> Result<Fix, Broken> {
    let Session { connection, client, .. } = &*session;
    *stage = Stage::Starting;
    set_property(connection, client, "RequestedAccuracyLevel", Variant::from(level))
        .await
        .map_err(|error| broken("setting RequestedAccuracyLevel", error))?;
    let rule = zbus::MatchRule::builder()
        .msg_type(MessageType::Signal)
        .interface(CLIENT)
        .member("LocationUpdated")
        .path(client.clone())
        .build()
        .map_err(Broken::Bus)?;
    let mut updates = zbus::MessageStream::for_match_rule(rule, connection, None).await.map_err(Broken::Bus)?;
    let started = connection
        .call_method(Some(SERVICE), client, Some(CLIENT), "Start", &())
        .await
        .map_err(|e| broken("Start", e))?;
    // Only GeoClue (the peer that answered Start) may announce the client's location: any peer
    // on the bus can emit a signal on that path.
    let geoclue = started.header().sender().map(|sender| sender.to_owned());
    *stage = Stage::WaitingForFix;
    // A client started while GeoClue already knows where it is may get that location without a
    // LocationUpdated (the sources report the same position, so nothing changes): the property
    // says so. Anything else waits for the signal.
    let current = connection
        .call_method(Some(SERVICE), client, Some(PROPERTIES), "Get", &(CLIENT, "Location"))
        .await
        .map_err(|error| broken("reading the client's Location", error))?;
    let current: OwnedVariant =
        current.body().deserialize().map_err(|e| Broken::Said(LocateError::Failed(format!("odd Location: {e}"))))?;
    let current = OwnedObjectPath::try_from(current).ok().filter(|path| path.as_str() != "/");
    let known = current.filter(|path| session.answered.as_ref() != Some(path));
    let location: OwnedObjectPath = if let Some(path) = known {
        path
    } else {
        loop {
            match updates.next().await {
                Some(Ok(message)) if message.header().sender().map(|s| s.to_owned()) == geoclue => {
                    match message.body().deserialize::<(OwnedObjectPath, OwnedObjectPath)>() {
                        Ok((_, new)) if new.as_str() != "/" => break new,
                        Ok(_) => continue,
                        Err(error) => {
                            return Err(Broken::Said(LocateError::Failed(format!(
                                "GeoClue's LocationUpdated was odd: {error}"
                            ))));
                        }
                    }
                }
                Some(_) => continue,
                None => return Err(Broken::Bus(zbus::Error::Failure("the system D-Bus closed the connection".into()))),
            }
        }
    };
    let read = properties(connection, &location, LOCATION).await;
    stop(session).await;
    session.answered = Some(location);
    let values = read.map_err(|error| broken("reading the Location", error))?;
    fix_from(&values).map_err(|error| Broken::Said(LocateError::Failed(error)))
}

/// A [`Fix`] from a `org.freedesktop.GeoClue2.Location`'s properties.
fn fix_from(values: &HashMap<String, OwnedVariant>) -> Result<Fix, String> {
    let number = |name: &str| -> Result<f64, String> {
        let value = values.get(name).ok_or_else(|| format!("GeoClue's Location has no {name}"))?;
        f64::try_from(value).map_err(|error| format!("GeoClue's Location {name} is not a number ({error})"))
    };
    let (latitude, longitude) = (number("Latitude")?, number("Longitude")?);
    // GeoClue says -1 (or nothing) when a source has no estimate.
    let accuracy = number("Accuracy").ok().filter(|metres| metres.is_finite() && *metres >= 0.0).unwrap_or(0.0);
    let timestamp_ms = match values.get("Timestamp").map(|value| (**value).clone().downcast::<(u64, u64)>()) {
        Some(Ok((seconds, micros))) => (seconds * 1000 + micros / 1000) as i64,
        _ => now_ms(),
    };
    let plausible = (-90.0..=90.0).contains(&latitude) && (-180.0..=180.0).contains(&longitude);
    if !plausible {
        return Err(format!("GeoClue answered an impossible position ({latitude}, {longitude})"));
    }
    Ok(Fix { latitude, longitude, accuracy, timestamp_ms })
}

pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_millis() as i64)
}

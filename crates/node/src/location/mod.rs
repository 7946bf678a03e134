//! `location.get`: where this machine is (category `location`).
//!
//! | file | what it does |
//! | --- | --- |
//! | [`geoclue`] | GeoClue2 on the system D-Bus: one persistent connection and its client object, a fix per call |
//! | [`gpsd`] | gpsd's JSON protocol over loopback TCP (`?WATCH` → the first `TPV` with a 2D/3D fix) |
//! | this file | arguments (upstream's names and defaults, our clamps), the `maxAge` cache, backend order, the answers |
//!
//! The "Location" switch (`NodeLocationEnabled`, off by default) is read live: off, the command
//! is not listed and a call answers `LOCATION_PERMISSION_REQUIRED` with how to turn it on. The
//! backends: GeoClue when the system bus has `org.freedesktop.GeoClue2` (running or
//! activatable), and gpsd when something answers on its port. A call asks both at once within
//! one `locationTimeout` and answers the first fix, so a GeoClue that cannot deliver (no agent, no
//! source) does not keep gpsd's fix from the caller. Neither present: the command is not listed, and `clawmcp node
//! status` / `clawmcp doctor` say which package to install.
//!
//! The answer is upstream's four keys exactly, `{latitude, longitude, accuracy, timestamp}`
//! (accuracy in metres, timestamp in ms since the epoch), to MCP (as JSON and structuredContent)
//! and to the gateway alike; which backend answered goes to the log.

mod geoclue;
mod gpsd;

use std::net::SocketAddr;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use clawmcp_mcp::tool::codes::UNAVAILABLE;
use clawmcp_mcp::{CallContext, ToolAnnotations, ToolFailure, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::availability::{Gate, MissingBackend, Switch};
use crate::capability::{Capability, Command, CommandSpec, InvokeRequest, args};
use crate::settings::LiveSettings;

/// Upstream's defaults.
pub const DEFAULT_MAX_AGE_MS: u64 = 30_000;
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// `maxAge` is clamped to 0 (always a new fix) ..= one day.
pub const MAX_MAX_AGE_MS: u64 = 86_400_000;
/// `locationTimeout` is clamped to this range: below half a second not even a cached GeoClue
/// answers reliably; above a minute a caller is better served by asking again.
pub const MIN_TIMEOUT_MS: u64 = 500;
pub const MAX_TIMEOUT_MS: u64 = 60_000;
/// gpsd's registered port, on loopback.
pub const DEFAULT_GPSD: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 2947);
/// The gateway's error code when the owner (the switch) or GeoClue's agent said no.
pub const LOCATION_PERMISSION_REQUIRED: &str = "LOCATION_PERMISSION_REQUIRED";

/// What the caller asked for, from upstream's `accuracy` names (`default`, `high`) and the
/// plain ones. A cached fix taken at a GeoClue level serves requests at that level or below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accuracy {
    Coarse,
    Default,
    Precise,
}

impl Accuracy {
    fn parse(args: &Map<String, Value>) -> Result<Accuracy, ToolFailure> {
        let text = match args.get("accuracy") {
            None | Some(Value::Null) => return Ok(Accuracy::Default),
            Some(Value::String(text)) => text.trim().to_ascii_lowercase(),
            Some(_) => {
                return Err(ToolFailure::invalid_request("accuracy must be a string: coarse, default or precise"));
            }
        };
        match text.as_str() {
            "" | "default" => Ok(Accuracy::Default),
            "coarse" => Ok(Accuracy::Coarse),
            // "high" is the Windows node's name for the finest level.
            "precise" | "high" => Ok(Accuracy::Precise),
            _ => Err(ToolFailure::invalid_request(format!(
                "Unknown accuracy `{}`. Use default (the best source there is; precise and high mean the \
                 same) or coarse (city-level sources only).",
                text.chars().take(32).collect::<String>()
            ))),
        }
    }

    /// GeoClue's `GClueAccuracyLevel` (CITY 4, EXACT 8). GeoClue starts only the sources no more
    /// precise than the level asked for, so anything below EXACT leaves GPS and NMEA off: default
    /// asks for EXACT too (every source, the best one wins), and coarse for CITY (city-level
    /// sources only, for a caller that must not learn more).
    fn geoclue_level(self) -> u32 {
        match self {
            Accuracy::Coarse => geoclue::CITY,
            Accuracy::Default | Accuracy::Precise => geoclue::EXACT,
        }
    }
}

/// `location.get`'s arguments with the defaults and clamps applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LocateArgs {
    accuracy: Accuracy,
    max_age: Duration,
    timeout: Duration,
}

impl LocateArgs {
    fn parse(args: &Map<String, Value>) -> Result<LocateArgs, ToolFailure> {
        let accuracy = Accuracy::parse(args)?;
        let max_age_ms = args::whole_number(args, "maxAge")?
            .map_or(DEFAULT_MAX_AGE_MS, |ms| ms.clamp(0, MAX_MAX_AGE_MS as i64) as u64);
        let timeout_ms = args::whole_number(args, "locationTimeout")?
            .map_or(DEFAULT_TIMEOUT_MS, |ms| ms.clamp(MIN_TIMEOUT_MS as i64, MAX_TIMEOUT_MS as i64) as u64);
        Ok(LocateArgs {
            accuracy,
            max_age: Duration::from_millis(max_age_ms),
            timeout: Duration::from_millis(timeout_ms),
        })
    }
}

/// One position, as upstream answers it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fix {
    pub latitude: f64,
    pub longitude: f64,
    /// Metres (0 when the source did not estimate it, as GeoClue's NMEA source does not).
    pub accuracy: f64,
    /// Milliseconds since the epoch: when the source took the fix.
    pub timestamp_ms: i64,
}

impl Fix {
    fn answer(&self) -> Value {
        json!({
            "latitude": self.latitude,
            "longitude": self.longitude,
            "accuracy": self.accuracy,
            "timestamp": self.timestamp_ms,
        })
    }
}

/// Why a backend gave no fix.
#[derive(Debug, Clone, PartialEq)]
pub enum LocateError {
    Cancelled,
    /// GeoClue (its agent, or its configuration) refused this program.
    Denied(String),
    /// No fix within the time, or the backend has nothing to locate with.
    NotAvailable(String),
    /// The backend broke (an odd answer, a lost connection).
    Failed(String),
}

/// Where the capability looks (tests name private daemons).
#[derive(Debug, Clone)]
struct Config {
    /// The system bus address; `None` is `$DBUS_SYSTEM_BUS_ADDRESS`, else the standard socket.
    system_bus: Option<String>,
    gpsd: SocketAddr,
}

impl Default for Config {
    fn default() -> Self {
        Config { system_bus: None, gpsd: DEFAULT_GPSD }
    }
}

/// The last fix, for `maxAge`: when it arrived (monotonic) and for which accuracy.
#[derive(Debug, Clone, Copy)]
struct Cached {
    fix: Fix,
    at: Instant,
    accuracy: Accuracy,
}

/// The backends and the cache, shared by every call.
struct Locator {
    config: Config,
    geoclue: geoclue::GeoClue,
    cache: Mutex<Option<Cached>>,
}

/// The `location` capability.
pub struct LocationCapability {
    commands: Vec<Command>,
}

impl LocationCapability {
    pub fn new(settings: Arc<LiveSettings>) -> Self {
        LocationCapability::with_config(settings, Config::default())
    }

    fn with_config(settings: Arc<LiveSettings>, config: Config) -> Self {
        let locator = Arc::new(Locator {
            geoclue: geoclue::GeoClue::new(config.system_bus.clone()),
            config,
            cache: Mutex::new(None),
        });
        let gate = Gate::new(settings.clone(), Some(&Switch::LOCATION), {
            let locator = locator.clone();
            move || locator.present().map(drop)
        });
        let get = spec().with_output_handler({
            let gate = gate.clone();
            move |request, ctx| get(settings.clone(), gate.clone(), locator.clone(), request, ctx)
        });
        LocationCapability { commands: vec![gate.apply(get)] }
    }
}

impl Capability for LocationCapability {
    fn commands(&self) -> Vec<Command> {
        self.commands.clone()
    }
}

fn spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| {
        CommandSpec {
        name: "location.get",
        title: Some("Location"),
        description: Some(
            "Where this machine is, from GeoClue (GPS, Wi-Fi, cell, or an NMEA feed) and gpsd, asked at once. accuracy default \
             (the best source there is; precise and high are the same) or coarse (city-level sources only, never \
             GPS); maxAge ms (default 30000): \
             a fix at least as precise taken within it is returned at once, 0 always asks anew; locationTimeout ms \
             (500..60000, default 10000) bounds the wait. Returns {latitude, longitude, accuracy (metres, 0 when the \
             source gives no estimate), timestamp (ms since the epoch, when the fix was taken)}.",
        ),
        input_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "accuracy": {"type": "string", "enum": ["coarse", "default", "precise", "high"], "default": "default"},
                    "maxAge": {"type": "integer", "minimum": 0, "maximum": MAX_MAX_AGE_MS, "default": DEFAULT_MAX_AGE_MS, "description": "Milliseconds: a cached fix younger than this is returned without asking again."},
                    "locationTimeout": {"type": "integer", "minimum": MIN_TIMEOUT_MS, "maximum": MAX_TIMEOUT_MS, "default": DEFAULT_TIMEOUT_MS, "description": "Milliseconds to wait for a fix."}
                },
                "additionalProperties": false
            })
            .into(),
        ),
        output_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "latitude": {"type": "number", "minimum": -90, "maximum": 90},
                    "longitude": {"type": "number", "minimum": -180, "maximum": 180},
                    "accuracy": {"type": "number", "minimum": 0},
                    "timestamp": {"type": "integer"}
                },
                "required": ["latitude", "longitude", "accuracy", "timestamp"],
                "additionalProperties": false
            })
            .into(),
        ),
        annotations: ToolAnnotations::READ_ONLY,
    }
    });
    SPEC.clone()
}

/// Which backends this machine has right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Present {
    geoclue: bool,
    gpsd: bool,
}

const INSTALL_A_BACKEND: &str = "install GeoClue (apt install geoclue-2.0; it runs on the system D-Bus and needs \
     a location agent: your desktop's, or geoclue-demo-agent on a machine without one) or gpsd (apt install gpsd, \
     with your GPS receiver configured in /etc/default/gpsd)";

impl Locator {
    /// The backends present, or what is missing and which package provides it (the gate's probe:
    /// one system-bus round trip and one loopback connect).
    fn present(&self) -> Result<Present, MissingBackend> {
        let geoclue = self.geoclue.probe();
        let gpsd = gpsd::probe(self.config.gpsd);
        match (geoclue, gpsd) {
            (Ok(()), gpsd) => Ok(Present { geoclue: true, gpsd: gpsd.is_ok() }),
            (Err(_), Ok(())) => Ok(Present { geoclue: false, gpsd: true }),
            (Err(no_geoclue), Err(no_gpsd)) => {
                Err(MissingBackend::new(format!("{} and {}", no_geoclue.what, no_gpsd.what), INSTALL_A_BACKEND))
            }
        }
    }

    fn cached(&self, args: &LocateArgs) -> Option<Fix> {
        let cache = self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        cache
            .filter(|cached| {
                cached.accuracy.geoclue_level() >= args.accuracy.geoclue_level() && cached.at.elapsed() < args.max_age
            })
            .map(|cached| cached.fix)
    }

    fn remember(&self, fix: Fix, accuracy: Accuracy) {
        let mut cache = self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *cache = Some(Cached { fix, at: Instant::now(), accuracy });
    }

    /// A fresh fix from the first backend that delivers one before `deadline`.
    async fn locate(&self, args: &LocateArgs, cancel: &CancellationToken) -> Result<Fix, ToolFailure> {
        // Synchronous like the gate's probe: a bus round trip on a thread of its own (bounded) and
        // a loopback connect.
        let present = self
            .present()
            .map_err(|missing| ToolFailure::new(format!("Location not available: {missing}")).with_code(UNAVAILABLE))?;
        let deadline = Instant::now() + args.timeout;
        let timeout_ms = args.timeout.as_millis();
        // Both backends are asked at once, so a GeoClue without a fix does not eat the time gpsd
        // needs: the first fix wins and the other is stopped (awaited, so GeoClue's client is
        // stopped too). A refusal by GeoClue's agent also decides, unless a fix came first.
        let both = cancel.child_token();
        let level = args.accuracy.geoclue_level();
        let geoclue = async {
            match present.geoclue {
                true => Some(self.geoclue.locate(level, deadline, timeout_ms, &both).await),
                false => None,
            }
        };
        let gpsd = async {
            match present.gpsd {
                true => Some(gpsd::locate(self.config.gpsd, deadline, timeout_ms, &both).await),
                false => None,
            }
        };
        tokio::pin!(geoclue, gpsd);
        let (mut geoclue_done, mut gpsd_done) = (false, false);
        let mut decided: Option<Result<Fix, ToolFailure>> = None;
        let mut reasons = Vec::new();
        while !(geoclue_done && gpsd_done) {
            let (backend, answer) = tokio::select! {
                answer = &mut geoclue, if !geoclue_done => { geoclue_done = true; ("GeoClue", answer) }
                answer = &mut gpsd, if !gpsd_done => { gpsd_done = true; ("gpsd", answer) }
            };
            if decided.is_some() {
                continue; // the other backend, stopped after the deciding answer
            }
            match answer {
                None => {}
                Some(Ok(fix)) => {
                    tracing::info!(backend, accuracy = fix.accuracy, "location fix");
                    decided = Some(Ok(fix));
                    both.cancel();
                }
                Some(Err(error @ LocateError::Denied(_))) => {
                    decided = Some(Err(failure(vec![(backend, error)])));
                    both.cancel();
                }
                Some(Err(error)) => reasons.push((backend, error)),
            }
        }
        decided.unwrap_or_else(|| Err(failure(reasons)))
    }
}

/// The call's error from each backend's reason (what, why, what to do).
fn failure(reasons: Vec<(&str, LocateError)>) -> ToolFailure {
    if reasons.iter().any(|(_, error)| *error == LocateError::Cancelled) {
        return clawmcp_mcp::CANCELLED.into();
    }
    if let Some((backend, LocateError::Denied(why))) = reasons.iter().find(|(_, e)| matches!(e, LocateError::Denied(_)))
    {
        return ToolFailure::new(format!(
            "{LOCATION_PERMISSION_REQUIRED}: {backend} refused this program the location: {why}. Allow it in your \
             desktop's location (privacy) settings, or for GeoClue add an [clawmcp] section with allowed=true to \
             /etc/geoclue/geoclue.conf."
        ))
        .with_code(LOCATION_PERMISSION_REQUIRED);
    }
    let said: Vec<String> = reasons
        .iter()
        .map(|(backend, error)| match error {
            LocateError::NotAvailable(why) | LocateError::Failed(why) => format!("{backend}: {why}"),
            LocateError::Cancelled | LocateError::Denied(_) => unreachable!("answered above"),
        })
        .collect();
    let kind = match reasons.iter().all(|(_, error)| matches!(error, LocateError::Failed(_))) {
        true => "Location failed",
        false => "Location not available",
    };
    ToolFailure::new(format!("{kind}: {}", said.join("; "))).with_code(UNAVAILABLE)
}

async fn get(
    settings: Arc<LiveSettings>,
    gate: Gate,
    locator: Arc<Locator>,
    request: InvokeRequest,
    ctx: CallContext,
) -> ToolOutcome {
    // The switch's refusal carries upstream's code, first in the text too (a gateway agent reads
    // the text); a missing backend stays `UNAVAILABLE`.
    if !Switch::LOCATION.is_on(&settings.current()) {
        let refusal = Switch::LOCATION.refusal("location.get");
        return Err(ToolFailure::new(format!("{LOCATION_PERMISSION_REQUIRED}: {}", refusal.message))
            .with_code(LOCATION_PERMISSION_REQUIRED));
    }
    gate.admit("location.get")?;
    let args = LocateArgs::parse(&request.args)?;
    if let Some(fix) = locator.cached(&args) {
        return Ok(ToolOutput::from(fix.answer()));
    }
    let fix = locator.locate(&args, &ctx.cancel).await?;
    locator.remember(fix, args.accuracy);
    Ok(ToolOutput::from(fix.answer()))
}

#[cfg(test)]
mod tests;

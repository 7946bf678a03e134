//! `location.get` against the real daemons: geoclue on a private system bus with its demo agent
//! and an NMEA Unix socket, and gpsd reading NMEA from a loopback TCP feeder. Each test draws
//! random coordinates, feeds them as NMEA GGA + RMC sentences (checksummed), and asserts the
//! answer equals them within 1e-6 degrees; the time-out, no-agent, switch-off, no-backend and
//! cancel paths are asserted on what the answer says. Every daemon and feeder is the test's own
//! (private sockets, 127.0.0.1) and is killed by its PID when the test ends.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Command as Process;

use clawmcp_mcp::tool::codes::INVALID_REQUEST;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use clawmcp_mcp::tool::codes::UNAVAILABLE;
use serde_json::json;

use super::*;
use crate::capability::Caller;
use crate::test_support::{STARTUP_DEADLINE, Spawned, private_bus_of_type, require, wait_for_name};

const GEOCLUE: &str = "/usr/libexec/geoclue";
const AGENT: &str = "/usr/libexec/geoclue-2.0/demos/agent";
/// The one configuration file geoclue reads.
const SYSTEM_CONFIG: &str = "/etc/geoclue/geoclue.conf";

/// Random coordinates, as NMEA can carry them (ddmm.mmmmmm: 1/60 µ-minute steps).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Coordinates {
    latitude: f64,
    longitude: f64,
}

fn random_coordinates() -> Coordinates {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).unwrap();
    let unit = |b: [u8; 4]| f64::from(u32::from_le_bytes(b)) / f64::from(u32::MAX);
    Coordinates {
        latitude: -80.0 + 160.0 * unit(bytes[..4].try_into().unwrap()),
        longitude: -179.0 + 358.0 * unit(bytes[4..].try_into().unwrap()),
    }
}

/// `$body*CS\r\n`, the checksum the XOR of the body's bytes.
fn sentence(body: &str) -> String {
    let checksum = body.bytes().fold(0u8, |sum, byte| sum ^ byte);
    format!("${body}*{checksum:02X}\r\n")
}

/// `degrees` as NMEA's `(d)ddmm.mmmmmm,H`.
fn nmea_angle(degrees: f64, width: usize, positive: char, negative: char) -> String {
    let hemisphere = if degrees < 0.0 { negative } else { positive };
    let degrees = degrees.abs();
    let whole = degrees.trunc();
    let minutes = (degrees - whole) * 60.0;
    format!("{:0width$}{:09.6},{hemisphere}", whole as u32, minutes)
}

/// A GGA and an RMC sentence for `at` (now), the fix the receiver reports.
fn nmea_fix(at: Coordinates) -> String {
    let now = time::OffsetDateTime::now_utc();
    let clock = format!("{:02}{:02}{:02}.{:02}", now.hour(), now.minute(), now.second(), now.millisecond() / 10);
    let date = format!("{:02}{:02}{:02}", now.day(), u8::from(now.month()), now.year() % 100);
    let (lat, lon) = (nmea_angle(at.latitude, 2, 'N', 'S'), nmea_angle(at.longitude, 3, 'E', 'W'));
    sentence(&format!("GPGGA,{clock},{lat},{lon},1,08,0.9,34.0,M,46.9,M,,"))
        + &sentence(&format!("GPRMC,{clock},A,{lat},{lon},0.0,0.0,{date},,,A"))
}

/// What the feeder sends: a fix, or nothing (a receiver without a position).
type Feeding = Arc<Mutex<Option<Coordinates>>>;

/// A feeder thread: every connection to `listener` gets the current fix every 100 ms until the
/// feeder drops. Threads are stopped and joined on drop.
struct Feeder {
    feeding: Feeding,
    stop: Arc<AtomicBool>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
    acceptor: Option<JoinHandle<()>>,
}

trait Listener: Send + 'static {
    type Stream: Write + Send + 'static;
    fn accept_one(&self) -> Option<Self::Stream>;
}

impl Listener for UnixListener {
    type Stream = std::os::unix::net::UnixStream;
    fn accept_one(&self) -> Option<Self::Stream> {
        self.accept().ok().map(|(stream, _)| stream)
    }
}

impl Listener for TcpListener {
    type Stream = TcpStream;
    fn accept_one(&self) -> Option<Self::Stream> {
        self.accept().ok().map(|(stream, _)| stream)
    }
}

impl Feeder {
    fn start<L: Listener>(listener: L, first: Option<Coordinates>, set_nonblocking: impl Fn(&L)) -> Feeder {
        set_nonblocking(&listener);
        let feeding: Feeding = Arc::new(Mutex::new(first));
        let stop = Arc::new(AtomicBool::new(false));
        let threads: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let acceptor = std::thread::spawn({
            let (feeding, stop, threads) = (feeding.clone(), stop.clone(), threads.clone());
            move || {
                while !stop.load(Ordering::SeqCst) {
                    let Some(mut stream) = listener.accept_one() else {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    };
                    let (feeding, stop) = (feeding.clone(), stop.clone());
                    threads.lock().unwrap().push(std::thread::spawn(move || {
                        while !stop.load(Ordering::SeqCst) {
                            let fix = *feeding.lock().unwrap();
                            if let Some(at) = fix
                                && stream.write_all(nmea_fix(at).as_bytes()).is_err()
                            {
                                return;
                            }
                            std::thread::sleep(Duration::from_millis(100));
                        }
                    }));
                }
            }
        });
        Feeder { feeding, stop, threads, acceptor: Some(acceptor) }
    }

    fn unix(path: &Path, first: Option<Coordinates>) -> Feeder {
        Feeder::start(UnixListener::bind(path).unwrap(), first, |l| l.set_nonblocking(true).unwrap())
    }

    /// A feeder on 127.0.0.1 and its port.
    fn tcp(first: Option<Coordinates>) -> (Feeder, u16) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        (Feeder::start(listener, first, |l| l.set_nonblocking(true).unwrap()), port)
    }

    fn feed(&self, fix: Option<Coordinates>) {
        *self.feeding.lock().unwrap() = fix;
    }
}

impl Drop for Feeder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for thread in self.threads.lock().unwrap().drain(..) {
            let _ = thread.join();
        }
    }
}

/// geoclue on a private system bus, reading an NMEA socket; with or without the demo agent.
/// Fields drop in order: the agent, geoclue, then the bus, then the feeder.
struct GeoClueHost {
    agent: Option<Spawned>,
    geoclue: Spawned,
    bus: Spawned,
    feeder: Feeder,
    address: String,
    dir: tempfile::TempDir,
}

impl GeoClueHost {
    async fn start(first: Option<Coordinates>, with_agent: bool) -> GeoClueHost {
        GeoClueHost::start_configured(first, with_agent, None).await
    }

    /// Like [`GeoClueHost::start`], with `extra` appended to the system's geoclue.conf: geoclue
    /// reads only that fixed path, so it runs in a private mount namespace with the file
    /// bind-mounted over it (`unshare`, util-linux; nothing outside the test sees it).
    async fn start_configured(first: Option<Coordinates>, with_agent: bool, extra: Option<&str>) -> GeoClueHost {
        let dir = tempfile::tempdir().unwrap();
        let (bus, address) = system_bus(dir.path());
        let socket = dir.path().join("nmea.sock");
        let feeder = Feeder::unix(&socket, first);
        if let Some(extra) = extra {
            let system = std::fs::read_to_string(SYSTEM_CONFIG).expect("geoclue's configuration (Debian: geoclue-2.0)");
            std::fs::write(dir.path().join("geoclue.conf"), format!("{system}\n{extra}\n")).unwrap();
        }
        let geoclue = start_geoclue(dir.path(), &address, &socket).await;
        let mut host = GeoClueHost { agent: None, geoclue, bus, feeder, address, dir };
        if with_agent {
            host.start_agent().await;
        }
        host
    }

    async fn start_agent(&mut self) {
        let mut command = Process::new(AGENT);
        command.env("DBUS_SYSTEM_BUS_ADDRESS", &self.address);
        self.agent = Some(Spawned::start(AGENT, "geoclue-2.0", &mut command, self.dir.path()));
        // geoclue logs the agent's registration (G_MESSAGES_DEBUG=all); a client asked for
        // before it would wait for the agent.
        let started = std::time::Instant::now();
        while !self.geoclue.stderr().contains("New agent for user ID") {
            assert!(
                started.elapsed() < STARTUP_DEADLINE,
                "the geoclue demo agent did not register; geoclue:\n{}\nagent:\n{}",
                self.geoclue.stderr(),
                self.agent.as_ref().unwrap().stderr()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Restarts geoclue (its client objects are gone; the bus stays).
    async fn restart_geoclue(&mut self) {
        self.agent = None;
        let _ = self.geoclue.child.kill();
        let _ = self.geoclue.child.wait();
        self.geoclue = start_geoclue(self.dir.path(), &self.address, &self.dir.path().join("nmea.sock")).await;
        self.start_agent().await;
    }

    /// Restarts the bus at the same address, then geoclue and the agent on it: every connection
    /// to the old bus is closed.
    async fn restart_bus(&mut self) {
        self.agent = None;
        let _ = self.geoclue.child.kill();
        let _ = self.geoclue.child.wait();
        let _ = self.bus.child.kill();
        let _ = self.bus.child.wait();
        let _ = std::fs::remove_file(self.dir.path().join("bus"));
        let (bus, address) = system_bus(self.dir.path());
        assert_eq!(address, self.address, "the same socket");
        self.bus = bus;
        self.restart_geoclue().await;
    }

    fn config(&self) -> Config {
        Config { system_bus: Some(self.address.clone()), gpsd: closed_port() }
    }
}

/// A private system bus in `dir`, its address without the server's guid (a bus restarted on the
/// same socket has another, and a client checks the one it was given).
fn system_bus(dir: &Path) -> (Spawned, String) {
    let (bus, address) = private_bus_of_type(dir, None, Process::new("dbus-daemon"), "system");
    let address = address.split(',').filter(|part| !part.starts_with("guid=")).collect::<Vec<_>>().join(",");
    (bus, address)
}

async fn start_geoclue(dir: &Path, address: &str, socket: &Path) -> Spawned {
    // GLib writes debug messages (the agent's registration, which the tests wait for) to stdout,
    // which nobody reads: the shell hands geoclue its stderr log as stdout too, then becomes it
    // (exec: the PID killed at the end is geoclue's). With a configuration of the test's own
    // (`dir/geoclue.conf`), `unshare` gives the shell a private mount namespace (and a user
    // namespace, so no privilege is needed) where that file is bind-mounted over the system's,
    // then execs it: still one PID.
    let config = dir.join("geoclue.conf");
    let mut command = if config.exists() {
        require("unshare", "util-linux");
        let mut command = Process::new("unshare");
        command
            .args(["--user", "--map-current-user", "--mount", "sh", "-c"])
            .arg(format!("mount --bind \"$CLAWMCP_GEOCLUE_CONF\" {SYSTEM_CONFIG} && exec \"$0\" \"$@\" >&2"));
        command.env("CLAWMCP_GEOCLUE_CONF", &config);
        command
    } else {
        let mut command = Process::new("sh");
        command.args(["-c", "exec \"$0\" \"$@\" >&2"]);
        command
    };
    command
        .args([GEOCLUE, "-t", "0", "--nmea-socket"])
        .arg(socket)
        .env("DBUS_SYSTEM_BUS_ADDRESS", address)
        .env("G_MESSAGES_DEBUG", "all");
    let mut geoclue = Spawned::start(GEOCLUE, "geoclue-2.0", &mut command, dir);
    wait_for_name(address, geoclue::SERVICE, &mut geoclue).await;
    geoclue
}

/// gpsd reading NMEA from a loopback feeder, serving on a loopback port of its own.
struct GpsdHost {
    _gpsd: Spawned,
    feeder: Feeder,
    address: SocketAddr,
    dir: tempfile::TempDir,
}

impl GpsdHost {
    fn start(first: Option<Coordinates>) -> GpsdHost {
        let dir = tempfile::tempdir().unwrap();
        let (feeder, feeder_port) = Feeder::tcp(first);
        let address = free_port();
        let mut command = Process::new("gpsd");
        command.args(["-N", "-n", "-S", &address.port().to_string(), &format!("tcp://127.0.0.1:{feeder_port}")]);
        let mut gpsd = Spawned::start("gpsd", "gpsd", &mut command, dir.path());
        let started = std::time::Instant::now();
        while TcpStream::connect(address).is_err() {
            if let Ok(Some(status)) = gpsd.child.try_wait() {
                panic!("gpsd exited ({status}); stderr:\n{}", gpsd.stderr());
            }
            assert!(started.elapsed() < STARTUP_DEADLINE, "gpsd did not listen; stderr:\n{}", gpsd.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
        GpsdHost { _gpsd: gpsd, feeder, address, dir }
    }

    /// Only gpsd: the system bus named is a socket that does not exist.
    fn config(&self) -> Config {
        Config { system_bus: Some(no_bus(self.dir.path())), gpsd: self.address }
    }
}

/// A loopback port nothing listens on (bound, then released).
fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

fn closed_port() -> SocketAddr {
    free_port()
}

fn no_bus(dir: &Path) -> String {
    format!("unix:path={}", dir.join("no-such-bus").display())
}

fn settings(dir: &Path, on: bool) -> Arc<LiveSettings> {
    let path = dir.join("settings.json");
    std::fs::write(&path, format!("{{\"NodeLocationEnabled\": {on}}}")).unwrap();
    Arc::new(LiveSettings::open(path).unwrap())
}

fn switch(dir: &Path, on: bool) {
    std::fs::write(dir.join("settings.json"), format!("{{\"NodeLocationEnabled\": {on}}}")).unwrap();
}

/// The capability (switch on) at `config`, its settings in `dir`.
fn capability(dir: &Path, config: Config) -> Command {
    LocationCapability::with_config(settings(dir, true), config).commands.remove(0)
}

fn request(args: Value) -> InvokeRequest {
    InvokeRequest {
        id: "t".into(),
        command: "location.get".into(),
        args: args.as_object().unwrap().clone(),
        session_key: None,
        caller: Caller::Mcp,
    }
}

async fn call(command: &Command, args: Value) -> ToolOutcome {
    command.call(request(args), CallContext::detached()).await
}

/// The answer's four keys, and that they are exactly upstream's.
fn answered(outcome: ToolOutcome) -> (f64, f64, f64, i64) {
    let output = outcome.unwrap_or_else(|failure| panic!("no fix: {}", failure.message));
    assert!(output.gateway.is_none(), "the gateway gets the same payload");
    let payload = output.payload.unwrap();
    let keys: Vec<&str> = payload.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["latitude", "longitude", "accuracy", "timestamp"]);
    (
        payload["latitude"].as_f64().unwrap(),
        payload["longitude"].as_f64().unwrap(),
        payload["accuracy"].as_f64().unwrap(),
        payload["timestamp"].as_i64().unwrap(),
    )
}

fn assert_at(outcome: ToolOutcome, expected: Coordinates) -> (f64, i64) {
    let (latitude, longitude, accuracy, timestamp) = answered(outcome);
    assert!(
        (latitude - expected.latitude).abs() < 1e-6 && (longitude - expected.longitude).abs() < 1e-6,
        "answered ({latitude}, {longitude}), fed ({}, {})",
        expected.latitude,
        expected.longitude
    );
    assert!(accuracy >= 0.0, "{accuracy}");
    (accuracy, timestamp)
}

/// The fix's time is the NMEA sentence's, which the feeder stamped with the clock's time: it lies
/// between `before` (taken before the daemons started) and now, give or take NMEA's hundredths
/// of a second and a second's slack for clock steps.
fn assert_recent(timestamp: i64, before: i64) {
    let after = geoclue::now_ms();
    assert!((before - 1_000..=after + 1_000).contains(&timestamp), "{before} <= {timestamp} <= {after}");
}

#[test]
fn nmea_sentences_carry_the_coordinates_and_a_correct_checksum() {
    // The checksum of a well-known sentence (from the NMEA 0183 examples).
    assert_eq!(
        sentence("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"),
        "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"
    );
    assert_eq!(nmea_angle(-52.52, 2, 'N', 'S'), "5231.200000,S");
    assert_eq!(nmea_angle(13.405, 3, 'E', 'W'), "01324.300000,E");
    assert_eq!(nmea_angle(-0.5, 3, 'E', 'W'), "00030.000000,W");
}

#[tokio::test]
async fn geoclue_answers_the_fed_coordinates() {
    let at = random_coordinates();
    // From before the daemons start: GeoClue may have read the feed since then.
    let before = geoclue::now_ms();
    let host = GeoClueHost::start(Some(at), true).await;
    let command = capability(host.dir.path(), host.config());
    let (_, timestamp) = assert_at(call(&command, json!({"accuracy": "precise", "maxAge": 0})).await, at);
    assert_recent(timestamp, before);

    // The same kept connection serves the next call, at another accuracy, with a new position.
    let moved = random_coordinates();
    host.feeder.feed(Some(moved));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_at(call(&command, json!({"accuracy": "default", "maxAge": 0})).await, moved);

    // Coarse leaves GPS and NMEA off (GeoClue starts no source more precise than asked): this
    // machine has nothing else, and the answer says what to ask instead.
    let failure = call(&command, json!({"accuracy": "coarse", "maxAge": 0, "locationTimeout": 500})).await;
    let message = failure.unwrap_err().message;
    assert!(message.contains("city-level sources: accuracy coarse leaves GPS and NMEA off"), "{message}");
}

#[tokio::test]
async fn geoclue_or_its_bus_restarted_between_calls_is_reconnected() {
    let at = random_coordinates();
    let mut host = GeoClueHost::start(Some(at), true).await;
    let command = capability(host.dir.path(), host.config());
    assert_at(call(&command, json!({"maxAge": 0, "accuracy": "precise"})).await, at);
    host.restart_geoclue().await;
    assert_at(call(&command, json!({"maxAge": 0, "accuracy": "precise"})).await, at);
    // The bus itself restarted: the kept connection is closed, and a new one is made.
    host.restart_bus().await;
    let moved = random_coordinates();
    host.feeder.feed(Some(moved));
    assert_at(call(&command, json!({"maxAge": 0, "accuracy": "precise"})).await, moved);
}

#[tokio::test]
async fn geoclue_without_a_fix_is_not_available_after_the_timeout() {
    let host = GeoClueHost::start(None, true).await;
    let command = capability(host.dir.path(), host.config());
    // 1 ms is below the floor: clamped to 500 ms, and the answer says so.
    let failure = call(&command, json!({"accuracy": "precise", "locationTimeout": 1})).await.unwrap_err();
    assert_eq!(failure.code, Some(UNAVAILABLE));
    assert!(
        failure.message.starts_with("Location not available: GeoClue: no fix within 500 ms (locationTimeout)"),
        "{}",
        failure.message
    );
    // The session survives a time-out: a fix fed afterwards is answered on it.
    let at = random_coordinates();
    host.feeder.feed(Some(at));
    assert_at(call(&command, json!({"accuracy": "precise", "maxAge": 0})).await, at);
}

#[tokio::test]
async fn geoclue_without_an_agent_says_one_is_needed() {
    let host = GeoClueHost::start(Some(random_coordinates()), false).await;
    let command = capability(host.dir.path(), host.config());
    let failure = call(&command, json!({"locationTimeout": 1000})).await.unwrap_err();
    assert_eq!(failure.code, Some(UNAVAILABLE));
    assert!(failure.message.starts_with("Location not available: GeoClue: no client within 1000 ms"));
    assert!(failure.message.contains("location agent"), "{}", failure.message);
    assert!(failure.message.contains("/usr/libexec/geoclue-2.0/demos/agent"), "{}", failure.message);
    assert!(host.agent.is_none());
}

/// GeoClue's own refusal, end to end: its configuration disallows this program (an agent is
/// running and a fix is fed, so nothing else could stop it).
#[tokio::test]
async fn geoclue_refusing_this_program_is_the_permission_error() {
    let refusal = format!("[{}]\nallowed=false\nsystem=false\nusers=", geoclue::DESKTOP_ID);
    let host = GeoClueHost::start_configured(Some(random_coordinates()), true, Some(&refusal)).await;
    let command = capability(host.dir.path(), host.config());
    let failure = call(&command, json!({"maxAge": 0, "locationTimeout": 5000})).await.unwrap_err();
    assert_eq!(failure.code, Some(LOCATION_PERMISSION_REQUIRED), "{}", failure.message);
    assert!(failure.message.starts_with("LOCATION_PERMISSION_REQUIRED: GeoClue refused"), "{}", failure.message);
    assert!(failure.message.contains("'clawmcp' disallowed by configuration"), "{}", failure.message);
    // The same daemons without the entry answer: the refusal was the configuration's.
    let allowed = GeoClueHost::start_configured(Some(random_coordinates()), true, Some("")).await;
    let command = capability(allowed.dir.path(), allowed.config());
    assert!(call(&command, json!({"maxAge": 0, "accuracy": "precise"})).await.is_ok());
}

#[tokio::test]
async fn gpsd_answers_the_fed_coordinates() {
    let at = random_coordinates();
    let before = geoclue::now_ms();
    let host = GpsdHost::start(Some(at));
    let command = capability(host.dir.path(), host.config());
    let outcome = call(&command, json!({"maxAge": 0})).await;
    let payload = outcome.as_ref().ok().and_then(|output| output.payload.clone()).unwrap_or_default();
    let schema = spec().output_schema.unwrap().to_value();
    assert!(jsonschema::validator_for(&schema).unwrap().is_valid(&payload), "{payload} fits the published schema");
    let (accuracy, timestamp) = assert_at(outcome, at);
    assert_recent(timestamp, before);
    assert!(accuracy > 0.0, "gpsd estimates the error from the HDOP fed (0.9): {accuracy}");
}

#[tokio::test]
async fn a_fix_younger_than_max_age_is_answered_without_asking_again() {
    let first = random_coordinates();
    let host = GpsdHost::start(Some(first));
    let command = capability(host.dir.path(), host.config());
    assert_at(call(&command, json!({"accuracy": "precise"})).await, first);
    let moved = random_coordinates();
    host.feeder.feed(Some(moved));
    // Within maxAge (the default, 30 s): the cached fix, even though the receiver moved.
    assert_at(call(&command, json!({})).await, first);
    assert_at(call(&command, json!({"accuracy": "coarse", "maxAge": 60_000})).await, first);
    // maxAge 0 always asks again.
    assert_at(call(&command, json!({"maxAge": 0})).await, moved);
}

#[test]
fn the_cache_serves_only_requests_no_finer_than_its_fix() {
    let locator = Locator { geoclue: geoclue::GeoClue::new(None), config: Config::default(), cache: Mutex::new(None) };
    let fix = Fix { latitude: 1.0, longitude: 2.0, accuracy: 3.0, timestamp_ms: 4 };
    let ask = |accuracy, max_age_ms| LocateArgs {
        accuracy,
        max_age: Duration::from_millis(max_age_ms),
        timeout: Duration::from_secs(1),
    };
    assert_eq!(locator.cached(&ask(Accuracy::Coarse, 60_000)), None, "nothing cached yet");
    locator.remember(fix, Accuracy::Default);
    assert_eq!(locator.cached(&ask(Accuracy::Coarse, 60_000)), Some(fix));
    assert_eq!(locator.cached(&ask(Accuracy::Default, 60_000)), Some(fix));
    assert_eq!(locator.cached(&ask(Accuracy::Precise, 60_000)), Some(fix), "default and precise ask the same");
    assert_eq!(locator.cached(&ask(Accuracy::Default, 0)), None, "maxAge 0 never reuses");
    locator.remember(fix, Accuracy::Coarse);
    assert_eq!(locator.cached(&ask(Accuracy::Coarse, 60_000)), Some(fix));
    assert_eq!(locator.cached(&ask(Accuracy::Default, 60_000)), None, "a city-level fix does not serve default");
}

#[tokio::test]
async fn gpsd_without_a_fix_is_not_available_after_the_timeout() {
    let host = GpsdHost::start(None);
    let command = capability(host.dir.path(), host.config());
    let failure = call(&command, json!({"locationTimeout": 500})).await.unwrap_err();
    assert_eq!(failure.code, Some(UNAVAILABLE));
    assert!(
        failure.message.starts_with(&format!(
            "Location not available: gpsd: no fix from {} within 500 ms (locationTimeout)",
            host.address
        )),
        "{}",
        failure.message
    );
}

#[tokio::test]
async fn cancelling_stops_the_wait_at_once() {
    let host = GpsdHost::start(None);
    let command = capability(host.dir.path(), host.config());
    let ctx = CallContext::detached();
    let cancel = ctx.cancel.clone();
    let call = tokio::spawn(command.call(request(json!({"locationTimeout": MAX_TIMEOUT_MS})), ctx));
    tokio::time::sleep(Duration::from_millis(200)).await;
    cancel.cancel();
    let failure = call.await.unwrap().unwrap_err();
    // Not the 60 s time-out's answer: the cancel's.
    assert_eq!(failure.message, clawmcp_mcp::CANCELLED);
}

#[tokio::test]
async fn geoclue_cancelled_while_waiting_for_a_fix_answers_cancelled_and_serves_the_next_call() {
    let host = GeoClueHost::start(None, true).await;
    let command = capability(host.dir.path(), host.config());
    let ctx = CallContext::detached();
    let cancel = ctx.cancel.clone();
    let call_task = tokio::spawn(command.call(request(json!({"locationTimeout": MAX_TIMEOUT_MS})), ctx));
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel.cancel();
    assert_eq!(call_task.await.unwrap().unwrap_err().message, clawmcp_mcp::CANCELLED);
    let at = random_coordinates();
    host.feeder.feed(Some(at));
    assert_at(call(&command, json!({"accuracy": "precise", "maxAge": 0})).await, at);
}

#[tokio::test]
async fn switched_off_it_is_not_listed_and_a_call_needs_the_permission() {
    let host = GpsdHost::start(Some(random_coordinates()));
    let command = LocationCapability::with_config(settings(host.dir.path(), false), host.config()).commands.remove(0);
    let reason = command.unavailable_reason().expect("off: not listed");
    assert!(reason.contains("clawmcp settings set NodeLocationEnabled true"), "{reason}");
    let failure = call(&command, json!({})).await.unwrap_err();
    assert_eq!(failure.code, Some(LOCATION_PERMISSION_REQUIRED));
    assert!(
        failure.message.starts_with("LOCATION_PERMISSION_REQUIRED: location.get is disabled by user setting"),
        "{}",
        failure.message
    );
    switch(host.dir.path(), true);
    assert_eq!(command.unavailable_reason(), None, "the switch applies at once");
    answered(call(&command, json!({})).await);
}

#[tokio::test]
async fn without_geoclue_or_gpsd_it_is_not_listed_and_says_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let gpsd = closed_port();
    let command = capability(dir.path(), Config { system_bus: Some(no_bus(dir.path())), gpsd });
    let reason = command.unavailable_reason().expect("no backend: not listed");
    assert!(reason.contains("no system D-Bus for GeoClue"), "{reason}");
    assert!(reason.contains(&format!("no gpsd at {gpsd}")), "{reason}");
    assert!(reason.contains("apt install geoclue-2.0") && reason.contains("apt install gpsd"), "{reason}");
    let failure = call(&command, json!({})).await.unwrap_err();
    assert_eq!(failure.code, Some(UNAVAILABLE));
    assert!(failure.message.contains("location.get is not available on this machine"), "{}", failure.message);

    // A system bus without GeoClue says that instead.
    let (_bus, address) = system_bus(dir.path());
    let command = capability(dir.path(), Config { system_bus: Some(address), gpsd });
    let reason = command.unavailable_reason().unwrap();
    assert!(reason.contains("no GeoClue2 service on the system bus"), "{reason}");
}

#[test]
fn arguments_take_upstreams_defaults_and_clamp_at_the_edges() {
    let parse = |args: Value| LocateArgs::parse(args.as_object().unwrap());
    let ms = Duration::from_millis;
    assert_eq!(
        parse(json!({})).unwrap(),
        LocateArgs { accuracy: Accuracy::Default, max_age: ms(30_000), timeout: ms(10_000) }
    );
    for (given, timeout) in [(-5, 500), (499, 500), (500, 500), (60_000, 60_000), (60_001, 60_000)] {
        assert_eq!(parse(json!({"locationTimeout": given})).unwrap().timeout, ms(timeout), "{given}");
    }
    for (given, max_age) in [(-1, 0), (0, 0), (86_400_000, 86_400_000), (86_400_001, 86_400_000)] {
        assert_eq!(parse(json!({"maxAge": given})).unwrap().max_age, ms(max_age), "{given}");
    }
    assert_eq!(parse(json!({"accuracy": " HIGH "})).unwrap().accuracy, Accuracy::Precise);
    assert_eq!(parse(json!({"accuracy": "coarse"})).unwrap().accuracy, Accuracy::Coarse);
    let unknown = parse(json!({"accuracy": "exactish"})).unwrap_err();
    assert_eq!(unknown.code, Some(INVALID_REQUEST));
    assert!(unknown.message.starts_with("Unknown accuracy `exactish`. Use default"), "{}", unknown.message);
    assert!(parse(json!({"accuracy": 8})).unwrap_err().message.contains("accuracy must be a string"));
    assert!(parse(json!({"maxAge": "soon"})).unwrap_err().message.contains("maxAge must be a whole number"));
    assert!(parse(json!({"locationTimeout": 1.5})).unwrap_err().message.contains("locationTimeout"));
}

#[test]
fn a_denial_by_geoclue_is_the_permission_error() {
    let denied = failure(vec![("GeoClue", LocateError::Denied("'clawmcp' disallowed by the agent".into()))]);
    assert_eq!(denied.code, Some(LOCATION_PERMISSION_REQUIRED));
    assert!(denied.message.starts_with("LOCATION_PERMISSION_REQUIRED: GeoClue refused"), "{}", denied.message);
    let broke = failure(vec![("gpsd", LocateError::Failed("it closed the connection".into()))]);
    assert_eq!(broke.message, "Location failed: gpsd: it closed the connection");
}

#[tokio::test]
async fn the_gateway_is_offered_location_get_exactly_while_it_is_served() {
    let host = GpsdHost::start(Some(random_coordinates()));
    let registry = crate::Registry::new();
    registry.register(&LocationCapability::with_config(settings(host.dir.path(), false), host.config()));
    let offered = |registry: &crate::Registry| -> Vec<String> {
        registry
            .gateway_surface(&crate::registry::ToolFilter::all())
            .iter()
            .map(|command| command.name().to_owned())
            .collect()
    };
    assert!(offered(&registry).is_empty(), "off: not declared to the gateway");
    switch(host.dir.path(), true);
    assert_eq!(offered(&registry), ["location.get"]);
    assert_eq!(registry.categories(), ["location"]);
}

#[tokio::test]
async fn over_mcp_the_fix_is_the_text_and_the_structured_content() {
    use clawmcp_mcp::McpService;
    let at = random_coordinates();
    let host = GpsdHost::start(Some(at));
    let registry = crate::Registry::new();
    registry.register(&LocationCapability::with_config(settings(host.dir.path(), true), host.config()));
    let service = crate::NodeMcpService::new(Arc::new(registry));
    let tool = service.list_tools().into_iter().find(|tool| tool.name == "location.get").expect("listed");
    assert!(tool.output_schema.is_some());
    let result = service.call_tool("location.get", Map::new(), CallContext::detached()).await;
    assert!(!result.is_error, "{:?}", result.first_text());
    let structured = result.structured_content.clone().expect("structuredContent");
    let text: Value = serde_json::from_str(result.first_text().unwrap()).unwrap();
    assert_eq!(text, structured);
    assert!((structured["latitude"].as_f64().unwrap() - at.latitude).abs() < 1e-6, "{structured}");
    assert!((structured["longitude"].as_f64().unwrap() - at.longitude).abs() < 1e-6, "{structured}");

    // A value outside the schema is refused before the handler, naming the argument.
    let mut bad = Map::new();
    bad.insert("accuracy".into(), json!("exactish"));
    let refused = service.call_tool("location.get", bad, CallContext::detached()).await;
    assert!(refused.is_error);
    assert!(refused.first_text().unwrap().contains("accuracy"), "{:?}", refused.first_text());
}

#[tokio::test]
async fn with_both_backends_the_first_fix_wins() {
    // GeoClue has no fix (and would wait the whole time-out); gpsd has one: gpsd's is answered.
    let at = random_coordinates();
    let silent_geoclue = GeoClueHost::start(None, true).await;
    let gpsd = GpsdHost::start(Some(at));
    let config = Config { system_bus: Some(silent_geoclue.address.clone()), gpsd: gpsd.address };
    let command = capability(silent_geoclue.dir.path(), config);
    assert_at(call(&command, json!({"locationTimeout": MAX_TIMEOUT_MS})).await, at);
    // And the other way round: GeoClue's fix while gpsd's receiver has none.
    let other = random_coordinates();
    silent_geoclue.feeder.feed(Some(other));
    gpsd.feeder.feed(None);
    let fresh_gpsd = GpsdHost::start(None);
    let config = Config { system_bus: Some(silent_geoclue.address.clone()), gpsd: fresh_gpsd.address };
    let command = capability(fresh_gpsd.dir.path(), config);
    assert_at(call(&command, json!({"locationTimeout": MAX_TIMEOUT_MS, "maxAge": 0})).await, other);
}

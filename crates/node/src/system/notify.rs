//! `system.notify`: a desktop notification through the freedesktop Notifications service on the
//! user's session D-Bus.
//!
//! Linux has no single notification API, but every desktop (GNOME Shell, KDE Plasma, dunst, mako,
//! xfce4-notifyd, …) owns the well-known name `org.freedesktop.Notifications` on the session bus
//! and serves the same interface, so that interface is the whole backend. It is spoken with zbus
//! directly rather than through notify-rust because notify-rust always dials the bus named by the
//! process environment; here the bus address is a parameter ([`deliver`]), so tests start a private
//! bus and deliver to it without mutating the environment of a multi-threaded test process.
//!
//! Every failure a user can hit names the missing piece (no session bus, an unreachable bus, no
//! notification daemon, a daemon that cannot be started, a bus that does not answer) and says
//! what to do. The whole exchange is bounded by [`DELIVERY_TIMEOUT`] so a hung bus cannot pin a
//! tool slot.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::LazyLock;
use std::time::Duration;

use clawmcp_mcp::ToolAnnotations;
use serde_json::{Map, Value, json};
use zbus::Address;
use zbus::Variant;
use zbus::address::transport::{Transport, Unix, UnixSocket};
use zbus::names::BusName;

use crate::capability::{CapabilityError, CommandSpec, InvokeResult, args};

/// Upper bound on one delivery: connect, authenticate, look the service up, ask it, send.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// The well-known bus name (and interface) every notification server implements.
const SERVICE: &str = "org.freedesktop.Notifications";
/// The application name servers show (and group by); `title` is the notification's own summary.
const APP_NAME: &str = "OpenClaw";
const DEFAULT_TITLE: &str = "OpenClaw";
/// `expire_timeout` of -1 lets the server apply the user's own display duration.
const SERVER_DEFAULT_EXPIRY: i32 = -1;

/// The published description, schema and annotations of `system.notify`.
pub fn command_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| {
        CommandSpec {
            name: "system.notify",
            title: Some("Show a notification"),
            output_schema: None,
            description: Some(
                "Show a desktop notification to the user on this machine (freedesktop notification \
                 service on the session D-Bus: GNOME, KDE, dunst, mako, ...). Returns {sent, id, server} \
                 where id is the server's notification id and server its name. Fails with an \
                 explanation when the machine has no desktop session or no notification daemon.",
            ),
            input_schema: Some(json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string", "description": "Headline of the notification.", "default": DEFAULT_TITLE},
                    "body": {"type": "string", "description": "Main text.", "default": ""},
                    "subtitle": {
                        "type": "string",
                        "description": "Secondary headline, shown as the first line of the body (freedesktop has no subtitle field)."
                    },
                    "sound": {
                        "type": "boolean",
                        "description": "false asks the server not to play its notification sound.",
                        "default": true
                    },
                    "urgency": {
                        "type": "string",
                        "enum": ["low", "normal", "critical"],
                        "description": "How insistently the server presents it; critical ones usually stay until dismissed. Omitted: the server's default (normal)."
                    }
                },
                "additionalProperties": false
            }).into()),
            annotations: ToolAnnotations::ADDITIVE,
        }
    });
    SPEC.clone()
}

/// Runs `system.notify` on the session bus of this process's environment.
pub async fn notify(args: &Map<String, Value>) -> InvokeResult {
    let notification = Notification::from_args(args)?;
    let address =
        session_bus_address(std::env::var_os("DBUS_SESSION_BUS_ADDRESS"), std::env::var_os("XDG_RUNTIME_DIR"))?;
    Ok(deliver(&address, &notification, DELIVERY_TIMEOUT).await?)
}

/// Why a notification was not shown. The texts are the tool errors a user reads.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error(
        "no desktop notification service: no session D-Bus ($DBUS_SESSION_BUS_ADDRESS is not set and \
         {runtime_bus} does not exist); run clawmcp node inside a desktop session, or start one with \
         dbus-run-session"
    )]
    NoSessionBus { runtime_bus: String },
    #[error(
        "no desktop notification service: $DBUS_SESSION_BUS_ADDRESS is not a valid D-Bus address \
         ({reason}); fix or unset it"
    )]
    InvalidAddress { reason: String },
    #[error(
        "no desktop notification service: cannot connect to the session D-Bus at {address} ({reason}); \
         check that $DBUS_SESSION_BUS_ADDRESS names the running session bus, or run clawmcp node \
         inside a desktop session"
    )]
    Unreachable { address: String, reason: String },
    #[error(
        "no desktop notification service: nothing on the session D-Bus at {address} owns {SERVICE}; \
         start a notification daemon in this session (your desktop's own, or dunst, mako, \
         xfce4-notifyd)"
    )]
    NoService { address: String },
    #[error(
        "no desktop notification service: the session D-Bus could not start the {SERVICE} service \
         ({reason}); check the notification daemon's installation, or start one by hand"
    )]
    ActivationFailed { reason: String },
    #[error(
        "notification not sent: the session D-Bus at {address} did not answer within {} s; the bus \
         or the notification daemon is hung, restart it",
        timeout.as_secs()
    )]
    TimedOut { address: String, timeout: Duration },
    #[error("notification not sent: the notification service refused it ({reason})")]
    Rejected { reason: String },
}

impl From<NotifyError> for CapabilityError {
    fn from(error: NotifyError) -> Self {
        CapabilityError::new(error.to_string())
    }
}

/// Where the session bus is, resolved the way libdbus and sd-bus do: the address in
/// `$DBUS_SESSION_BUS_ADDRESS`, else the per-user bus socket `$XDG_RUNTIME_DIR/bus` when it exists.
/// Takes the two variables as arguments so tests need not touch the process environment.
pub fn session_bus_address(
    bus_address_var: Option<OsString>,
    runtime_dir_var: Option<OsString>,
) -> Result<Address, NotifyError> {
    if let Some(value) = bus_address_var.filter(|v| !v.is_empty()) {
        let text = value.to_string_lossy();
        return Address::from_str(&text).map_err(|e| NotifyError::InvalidAddress { reason: e.to_string() });
    }
    let runtime_bus = runtime_dir_var.filter(|v| !v.is_empty()).map(|dir| PathBuf::from(dir).join("bus"));
    match runtime_bus {
        Some(path) if path.exists() => Ok(Address::new(Transport::Unix(Unix::new(UnixSocket::File(path))))),
        Some(path) => Err(NotifyError::NoSessionBus { runtime_bus: path.display().to_string() }),
        None => Err(NotifyError::NoSessionBus { runtime_bus: "$XDG_RUNTIME_DIR/bus".to_string() }),
    }
}

/// Freedesktop urgency levels (the `urgency` hint is a byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    Low = 0,
    Normal = 1,
    Critical = 2,
}

impl Urgency {
    fn parse(text: &str) -> Result<Urgency, CapabilityError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "low" => Ok(Urgency::Low),
            "normal" => Ok(Urgency::Normal),
            "critical" => Ok(Urgency::Critical),
            _ => Err(CapabilityError::new(format!("Invalid urgency \"{text}\". Valid: low, normal, critical"))),
        }
    }
}

/// One notification, already mapped from the tool arguments to freedesktop terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub summary: String,
    /// Plain text; escaped on the way out when the server parses markup.
    pub body: String,
    /// `None` leaves the server's default.
    pub urgency: Option<Urgency>,
    pub sound: bool,
}

impl Notification {
    /// Reads the tool arguments with the upstream leniency (a wrong JSON type means "absent"),
    /// except that an `urgency` string outside the three levels is an error rather than a guess.
    pub fn from_args(args: &Map<String, Value>) -> Result<Notification, CapabilityError> {
        let body = args::string(args, "body").unwrap_or_default();
        let body = match args::string(args, "subtitle").filter(|s| !s.is_empty()) {
            Some(subtitle) if body.is_empty() => subtitle.to_string(),
            Some(subtitle) => format!("{subtitle}\n{body}"),
            None => body.to_string(),
        };
        Ok(Notification {
            summary: args::string(args, "title").unwrap_or(DEFAULT_TITLE).to_string(),
            body,
            urgency: args::string(args, "urgency").map(Urgency::parse).transpose()?,
            sound: args::bool(args, "sound").unwrap_or(true),
        })
    }

    /// The `hints` dictionary of the `Notify` call.
    fn hints(&self) -> HashMap<&'static str, Variant<'static>> {
        let mut hints = HashMap::new();
        if let Some(urgency) = self.urgency {
            hints.insert("urgency", Variant::U8(urgency as u8));
        }
        if !self.sound {
            hints.insert("suppress-sound", Variant::Bool(true));
        }
        hints
    }

    /// The body as sent: servers advertising `body-markup` parse a small HTML subset, so text that
    /// merely contains `<` or `&` must be escaped to show literally.
    fn body_for(&self, capabilities: &[String]) -> String {
        if capabilities.iter().any(|c| c == "body-markup") {
            self.body.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
        } else {
            self.body.clone()
        }
    }
}

/// The freedesktop Notifications interface (spec 1.2), the three calls used here.
#[zbus::proxy(
    interface = "org.freedesktop.Notifications",
    default_service = "org.freedesktop.Notifications",
    default_path = "/org/freedesktop/Notifications"
)]
trait Notifications {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        app_name: &str,
        replaces_id: u32,
        app_icon: &str,
        summary: &str,
        body: &str,
        actions: &[&str],
        hints: HashMap<&str, Variant<'_>>,
        expire_timeout: i32,
    ) -> zbus::Result<u32>;

    fn get_capabilities(&self) -> zbus::Result<Vec<String>>;

    /// (name, vendor, version, spec_version)
    fn get_server_information(&self) -> zbus::Result<(String, String, String, String)>;
}

/// Shows `notification` through the bus at `address`, giving up after `timeout`.
/// Returns the tool result `{sent: true, id, server}`.
pub async fn deliver(address: &Address, notification: &Notification, timeout: Duration) -> Result<Value, NotifyError> {
    match tokio::time::timeout(timeout, exchange(address, notification)).await {
        Ok(result) => result,
        Err(_) => Err(NotifyError::TimedOut { address: address.to_string(), timeout }),
    }
}

async fn exchange(address: &Address, notification: &Notification) -> Result<Value, NotifyError> {
    let unreachable = |e: zbus::Error| NotifyError::Unreachable { address: address.to_string(), reason: e.to_string() };
    let connection = zbus::connection::Builder::address(address.clone()).build().await.map_err(unreachable)?;

    // A server that is not running may still be started by the bus on the first call (D-Bus
    // activation); only when it is neither running nor activatable is there nobody to ask.
    let bus = zbus::fdo::DBusProxy::new(&connection).await.map_err(unreachable)?;
    let service = BusName::from_static_str(SERVICE).expect("a valid well-known name");
    let running = bus.name_has_owner(service).await.map_err(|e| unreachable(e.into()))?;
    if !running {
        let activatable = bus.list_activatable_names().await.map_err(|e| unreachable(e.into()))?;
        if !activatable.iter().any(|name| name.as_str() == SERVICE) {
            return Err(NotifyError::NoService { address: address.to_string() });
        }
    }
    let failed = |e: zbus::Error| match running {
        true => NotifyError::Rejected { reason: e.to_string() },
        false => NotifyError::ActivationFailed { reason: e.to_string() },
    };

    let server = NotificationsProxy::builder(&connection)
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await
        .map_err(failed)?;
    let (server_name, ..) = server.get_server_information().await.map_err(failed)?;
    let capabilities = server.get_capabilities().await.map_err(failed)?;
    let id = server
        .notify(
            APP_NAME,
            0,
            "",
            &notification.summary,
            &notification.body_for(&capabilities),
            &[],
            notification.hints(),
            SERVER_DEFAULT_EXPIRY,
        )
        .await
        .map_err(failed)?;
    Ok(json!({"sent": true, "id": id, "server": server_name}))
}

#[cfg(test)]
mod tests {
    //! The delivery tests run a real notification daemon (dunst on Xvfb) on a private session bus
    //! and read back what it received; the failure tests build each broken setup for real.

    use std::os::unix::net::UnixListener;
    use std::path::Path;
    use std::process::Command;

    use super::*;
    use crate::test_support::{STARTUP_DEADLINE, Spawned, require, xvfb};

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().expect("an object").clone()
    }

    fn nonce() -> String {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).expect("random bytes");
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// [`crate::test_support::private_bus`] run by the test's own user, its address parsed.
    fn private_bus(dir: &Path, service_dir: Option<&Path>) -> (Spawned, Address) {
        let (bus, address) = crate::test_support::private_bus(dir, service_dir, Command::new("dbus-daemon"));
        let address = Address::from_str(&address).unwrap_or_else(|e| panic!("dbus-daemon printed {address:?}: {e}"));
        (bus, address)
    }

    /// dunst on `display`, serving the bus at `address`; returns once it owns the service name.
    /// Configured to parse body markup, as the big desktops' servers do, so escaping is exercised.
    async fn dunst(dir: &Path, display: &str, address: &Address) -> Spawned {
        require("dunstctl", "dunst");
        let config = dir.join("dunstrc");
        std::fs::write(
            &config,
            "[global]
    markup = full
",
        )
        .expect("write dunstrc");
        let mut daemon = Spawned::start(
            "dunst",
            "dunst",
            Command::new("dunst")
                .arg("-config")
                .arg(&config)
                .env("DISPLAY", display)
                .env("DBUS_SESSION_BUS_ADDRESS", address.to_string()),
            dir,
        );
        let connection = zbus::connection::Builder::address(address.clone()).build().await.unwrap();
        let bus = zbus::fdo::DBusProxy::new(&connection).await.unwrap();
        let started = std::time::Instant::now();
        loop {
            if bus.name_has_owner(BusName::from_static_str(SERVICE).unwrap()).await.unwrap() {
                return daemon;
            }
            if let Ok(Some(status)) = daemon.child.try_wait() {
                panic!("dunst exited ({status}) before owning {SERVICE}; stderr:\n{}", daemon.stderr());
            }
            assert!(started.elapsed() < STARTUP_DEADLINE, "dunst did not own {SERVICE}; stderr:\n{}", daemon.stderr());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// What dunst keeps of every closed notification (`dunstctl history`, JSON from busctl).
    fn dunst_history(address: &Address) -> Vec<Value> {
        require("busctl", "systemd");
        require("dbus-send", "dbus-bin");
        let dunstctl = |command: &str| {
            let output = Command::new("dunstctl")
                .arg(command)
                .env("DBUS_SESSION_BUS_ADDRESS", address.to_string())
                .output()
                .expect("run dunstctl");
            assert!(output.status.success(), "dunstctl {command} failed: {}", String::from_utf8_lossy(&output.stderr));
            output.stdout
        };
        // History only fills when notifications are closed.
        dunstctl("close-all");
        let history: Value = serde_json::from_slice(&dunstctl("history")).expect("dunstctl history prints JSON");
        history["data"][0].as_array().expect("history data[0] is the list").clone()
    }

    fn field<'a>(entry: &'a Value, name: &str) -> &'a Value {
        &entry[name]["data"]
    }

    #[tokio::test]
    async fn a_real_notification_daemon_shows_title_subtitle_body_and_urgency() {
        let dir = tempfile::tempdir().unwrap();
        let (_x, display) = xvfb(dir.path());
        let (_bus, address) = private_bus(dir.path(), None);
        let _dunst = dunst(dir.path(), &display, &address).await;

        let title = format!("Build finished {}", nonce());
        let notification = Notification::from_args(&args(json!({
            "title": title,
            "subtitle": "clawmcp",
            "body": "tests: 3 < 4 & all green",
            "urgency": "critical",
            "sound": false
        })))
        .unwrap();
        let sent = deliver(&address, &notification, DELIVERY_TIMEOUT).await.expect("delivered");
        assert_eq!(sent["sent"], json!(true));
        assert_eq!(sent["server"], json!("dunst"));
        let id = sent["id"].as_u64().expect("numeric id");
        assert!(id > 0, "servers number notifications from 1: {sent}");

        let defaults_nonce = nonce();
        let defaults = Notification::from_args(&args(json!({"body": defaults_nonce}))).unwrap();
        let sent_defaults = deliver(&address, &defaults, DELIVERY_TIMEOUT).await.expect("delivered");
        assert_ne!(sent_defaults["id"], sent["id"], "each notification gets its own id");

        let history = dunst_history(&address);
        let shown = history.iter().find(|e| field(e, "summary") == &json!(title)).unwrap_or_else(|| {
            panic!("dunst never received {title:?}: {history:#?}");
        });
        assert_eq!(field(shown, "id").as_u64(), Some(id));
        assert_eq!(field(shown, "appname"), &json!(APP_NAME));
        // dunst advertises body-markup here, so the text travels escaped and renders literally.
        assert_eq!(field(shown, "body"), &json!("clawmcp\ntests: 3 &lt; 4 &amp; all green"));
        // dunst keeps critical notifications until dismissed (timeout 0) and times others out.
        assert_eq!(field(shown, "timeout"), &json!(0), "urgency critical reached the server");

        let shown = history.iter().find(|e| field(e, "body") == &json!(defaults_nonce)).unwrap_or_else(|| {
            panic!("dunst never received the defaults notification: {history:#?}");
        });
        assert_eq!(field(shown, "summary"), &json!(DEFAULT_TITLE));
        assert!(field(shown, "timeout").as_i64().is_some_and(|t| t > 0), "server-default urgency: {shown}");
    }

    #[tokio::test]
    async fn a_bus_without_a_notification_service_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let (_bus, address) = private_bus(dir.path(), None);
        let error = deliver(&address, &Notification::from_args(&Map::new()).unwrap(), DELIVERY_TIMEOUT)
            .await
            .expect_err("nobody owns the name");
        assert!(matches!(error, NotifyError::NoService { .. }), "{error:?}");
        let message = error.to_string();
        assert!(
            message.starts_with("no desktop notification service: nothing on the session D-Bus at unix:path="),
            "{message}"
        );
        assert!(message.contains("owns org.freedesktop.Notifications; start a notification daemon"), "{message}");
    }

    #[tokio::test]
    async fn an_activatable_service_that_cannot_start_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let services = dir.path().join("services");
        std::fs::create_dir(&services).unwrap();
        std::fs::write(
            services.join("org.freedesktop.Notifications.service"),
            "[D-BUS Service]\nName=org.freedesktop.Notifications\nExec=/bin/false\n",
        )
        .unwrap();
        let (_bus, address) = private_bus(dir.path(), Some(&services));
        let error = deliver(&address, &Notification::from_args(&Map::new()).unwrap(), DELIVERY_TIMEOUT)
            .await
            .expect_err("the service exits at once");
        assert!(matches!(error, NotifyError::ActivationFailed { .. }), "{error:?}");
        assert!(error.to_string().starts_with("no desktop notification service: the session D-Bus could not start"));
    }

    #[tokio::test]
    async fn an_unreachable_bus_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let address = Address::from_str(&format!("unix:path={}/no-bus-here", dir.path().display())).unwrap();
        let error = deliver(&address, &Notification::from_args(&Map::new()).unwrap(), DELIVERY_TIMEOUT)
            .await
            .expect_err("nothing listens");
        assert!(matches!(error, NotifyError::Unreachable { .. }), "{error:?}");
        let message = error.to_string();
        assert!(
            message.starts_with("no desktop notification service: cannot connect to the session D-Bus at unix:path=")
        );
        assert!(message.contains("no-bus-here"), "{message}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_hung_bus_is_abandoned_exactly_at_the_delivery_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("silent-bus");
        // Accepts connections (the kernel queues them) but never speaks.
        let _listener = UnixListener::bind(&socket).unwrap();
        let address = Address::from_str(&format!("unix:path={}", socket.display())).unwrap();
        let started = tokio::time::Instant::now();
        let error = deliver(&address, &Notification::from_args(&Map::new()).unwrap(), DELIVERY_TIMEOUT)
            .await
            .expect_err("the bus never answers");
        assert_eq!(started.elapsed(), DELIVERY_TIMEOUT);
        assert!(matches!(error, NotifyError::TimedOut { .. }), "{error:?}");
        assert!(error.to_string().contains("did not answer within 5 s"), "{error}");
    }

    #[tokio::test]
    async fn notify_without_any_session_bus_says_what_is_missing_and_how_to_fix_it() {
        let error = session_bus_address(None, None).expect_err("no bus");
        assert_eq!(
            error.to_string(),
            "no desktop notification service: no session D-Bus ($DBUS_SESSION_BUS_ADDRESS is not set and \
             $XDG_RUNTIME_DIR/bus does not exist); run clawmcp node inside a desktop session, or start one \
             with dbus-run-session"
        );
        let empty_runtime_dir = tempfile::tempdir().unwrap();
        let error =
            session_bus_address(Some(OsString::new()), Some(empty_runtime_dir.path().into())).expect_err("no bus");
        assert!(
            error.to_string().contains(&format!("{}/bus does not exist", empty_runtime_dir.path().display())),
            "{error}"
        );
    }

    #[test]
    fn the_per_user_bus_socket_is_used_when_the_variable_is_unset() {
        let runtime_dir = tempfile::tempdir().unwrap();
        let socket = runtime_dir.path().join("bus");
        let _listener = UnixListener::bind(&socket).unwrap();
        let address = session_bus_address(None, Some(runtime_dir.path().into())).unwrap();
        match address.transport() {
            Transport::Unix(unix) => assert_eq!(unix.path(), &UnixSocket::File(socket)),
            other => panic!("expected a unix transport, got {other:?}"),
        }
        let explicit =
            session_bus_address(Some("unix:path=/tmp/elsewhere".into()), Some(runtime_dir.path().into())).unwrap();
        assert_eq!(explicit.to_string(), "unix:path=/tmp/elsewhere", "the variable wins over the runtime dir");
    }

    #[test]
    fn a_malformed_bus_address_is_explained() {
        let error = session_bus_address(Some("not-an-address".into()), None).expect_err("malformed");
        assert!(
            error
                .to_string()
                .starts_with("no desktop notification service: $DBUS_SESSION_BUS_ADDRESS is not a valid D-Bus address"),
            "{error}"
        );
    }

    #[test]
    fn arguments_map_to_freedesktop_terms() {
        let defaults = Notification::from_args(&Map::new()).unwrap();
        assert_eq!(
            defaults,
            Notification { summary: "OpenClaw".into(), body: String::new(), urgency: None, sound: true }
        );
        assert!(defaults.hints().is_empty(), "defaults leave every choice to the server");

        let subtitle_only = Notification::from_args(&args(json!({"subtitle": "Sub"}))).unwrap();
        assert_eq!(subtitle_only.body, "Sub");
        let both = Notification::from_args(&args(json!({"subtitle": "Sub", "body": "Body"}))).unwrap();
        assert_eq!(both.body, "Sub\nBody");

        let wrong_types = Notification::from_args(&args(json!({"title": 5, "body": [], "sound": "no", "urgency": 2})));
        assert_eq!(wrong_types.unwrap(), defaults, "wrong JSON types read as absent");

        let quiet = Notification::from_args(&args(json!({"sound": false, "urgency": " LOW "}))).unwrap();
        assert_eq!(quiet.urgency, Some(Urgency::Low));
        let hints = quiet.hints();
        assert_eq!(hints.get("suppress-sound"), Some(&Variant::Bool(true)));
        assert_eq!(hints.get("urgency"), Some(&Variant::U8(0)));
        let critical = Notification::from_args(&args(json!({"urgency": "critical"}))).unwrap();
        assert_eq!(critical.hints().get("urgency"), Some(&Variant::U8(2)));

        let error = Notification::from_args(&args(json!({"urgency": "urgent"}))).unwrap_err();
        assert_eq!(error.message, "Invalid urgency \"urgent\". Valid: low, normal, critical");
    }

    #[test]
    fn the_body_is_escaped_only_for_servers_that_parse_markup() {
        let notification = Notification::from_args(&args(json!({"body": "<b>1 & 2</b>"}))).unwrap();
        assert_eq!(notification.body_for(&["body".into(), "body-markup".into()]), "&lt;b&gt;1 &amp; 2&lt;/b&gt;");
        assert_eq!(notification.body_for(&["body".into()]), "<b>1 & 2</b>");
    }

    #[test]
    fn the_command_publishes_its_arguments_and_is_not_read_only() {
        let spec = command_spec();
        assert_eq!(spec.name, "system.notify");
        assert!(spec.description.is_some_and(|d| d.contains("{sent, id, server}")));
        let schema = spec.input_schema.expect("a schema").to_value();
        let properties = schema["properties"].as_object().unwrap();
        let names: Vec<&str> = properties.keys().map(String::as_str).collect();
        assert_eq!(names, ["title", "body", "subtitle", "sound", "urgency"]);
        assert_eq!(schema["properties"]["urgency"]["enum"], json!(["low", "normal", "critical"]));
        assert!(!spec.annotations.read_only_hint);
        assert!(!spec.annotations.destructive_hint);
    }
}

//! Test support shared by the unit tests that drive real desktop services: helper processes
//! killed by their PID when the test ends, and a private X server.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long a helper process may take to report readiness before the test gives up on it.
pub const STARTUP_DEADLINE: Duration = Duration::from_secs(10);

/// Fails (never skips) when a tool the test needs is missing, naming the package to install.
/// Looks on `PATH` and in /usr/libexec, where Debian puts daemons (the desktop portals, geoclue)
/// that are started by path rather than by name; an absolute `binary` is looked up as it is.
pub fn require(binary: &str, package: &str) {
    let on_path = Path::new(binary).is_absolute() && Path::new(binary).is_file()
        || std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).any(|dir| dir.join(binary).is_file()))
            .unwrap_or(false)
        || Path::new("/usr/libexec").join(binary).is_file();
    assert!(
        on_path,
        "`{binary}` is not installed; this test needs the Debian package `{package}` \
         (apt-get install -y --no-install-recommends {package})"
    );
}

/// A process a test started: killed by its PID and reaped when the guard drops, whatever
/// way the test ends.
pub struct Spawned {
    pub name: &'static str,
    pub child: Child,
    stderr_path: PathBuf,
}

impl Spawned {
    pub fn start(name: &'static str, package: &str, command: &mut Command, dir: &Path) -> Spawned {
        Spawned::start_with_stdin(name, package, command, dir, Stdio::null())
    }

    /// [`Spawned::start`] with `stdin` (a file the program reads).
    pub fn start_with_stdin(
        name: &'static str,
        package: &str,
        command: &mut Command,
        dir: &Path,
        stdin: Stdio,
    ) -> Spawned {
        require(name, package);
        let base = Path::new(name).file_name().map_or(name.into(), |base| base.to_string_lossy());
        let stderr_path = dir.join(format!("{base}.stderr"));
        let stderr = File::create(&stderr_path).expect("create stderr log");
        let child = command
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Spawned { name, child, stderr_path }
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// The first stdout line, which is how dbus-daemon (`--print-address`) and Xvfb
    /// (`-displayfd 1`) announce that they are ready.
    pub fn ready_line(&mut self) -> String {
        let stdout = self.child.stdout.take().expect("stdout is piped");
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = sender.send(line);
        });
        match receiver.recv_timeout(STARTUP_DEADLINE) {
            Ok(line) if !line.trim().is_empty() => line.trim().to_string(),
            _ => panic!("{} did not report readiness; stderr:\n{}", self.name, self.stderr()),
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An X server on a display it picks itself (`-displayfd`), so parallel tests never collide.
pub fn xvfb(dir: &Path) -> (Spawned, String) {
    xvfb_sized(dir, "640x480x24")
}

/// [`xvfb`] with one screen of `geometry` (`WIDTHxHEIGHTxDEPTH`).
pub fn xvfb_sized(dir: &Path, geometry: &str) -> (Spawned, String) {
    xvfb_with(dir, geometry, &[])
}

/// [`xvfb_sized`] with more server arguments (`-extension MIT-SHM` turns one off).
pub fn xvfb_with(dir: &Path, geometry: &str, extra: &[&str]) -> (Spawned, String) {
    let mut server = Spawned::start(
        "Xvfb",
        "xvfb",
        Command::new("Xvfb")
            .args(["-displayfd", "1", "-screen", "0", geometry, "-nolisten", "tcp", "-noreset"])
            .args(extra),
        dir,
    );
    let display = format!(":{}", server.ready_line());
    (server, display)
}

/// A headless Wayland compositor (sway, software rendering) in a runtime directory of its own,
/// killed by its PID when dropped.
pub struct Sway {
    _server: Spawned,
    /// Its socket's absolute path: a `WAYLAND_DISPLAY` value.
    pub socket: String,
    /// Its `XDG_RUNTIME_DIR`, owned by [`desktop_user`].
    pub runtime: tempfile::TempDir,
}

/// The uid desktop services run as in tests: `nobody` when the tests run as root (sway refuses
/// to run as root), else the test's own user.
pub fn desktop_user() -> nix::unistd::Uid {
    match nix::unistd::geteuid().is_root() {
        true => nix::unistd::Uid::from_raw(65534),
        false => nix::unistd::geteuid(),
    }
}

/// `program` to run as [`desktop_user`] (through setpriv when root) with a clean environment:
/// `PATH`, `HOME` and `XDG_RUNTIME_DIR` set to `runtime`.
pub fn desktop_command(program: &str, runtime: &Path) -> Command {
    let mut command = match nix::unistd::geteuid().is_root() {
        true => {
            require("setpriv", "util-linux");
            let mut command = Command::new("setpriv");
            command.args(["--reuid=65534", "--regid=65534", "--clear-groups", program]);
            command
        }
        false => Command::new(program),
    };
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", runtime)
        .env("XDG_RUNTIME_DIR", runtime);
    command
}

/// A fresh directory owned by [`desktop_user`], private to it.
pub fn desktop_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    if nix::unistd::geteuid().is_root() {
        nix::unistd::chown(dir.path(), Some(desktop_user()), Some(nix::unistd::Gid::from_raw(65534))).unwrap();
    }
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// Starts [`Sway`] with a 640x480 output.
pub fn sway() -> Sway {
    sway_with("output HEADLESS-1 resolution 640x480\n")
}

/// Starts [`Sway`] with `config` (as [`desktop_user`], in a runtime directory that belongs to it).
pub fn sway_with(config: &str) -> Sway {
    require("sway", "sway");
    let runtime = desktop_dir();
    let config_path = runtime.path().join("sway.config");
    std::fs::write(&config_path, config).unwrap();
    let mut command = desktop_command("sway", runtime.path());
    command
        .arg("-c")
        .arg(&config_path)
        .env("WLR_BACKENDS", "headless")
        .env("WLR_LIBINPUT_NO_DEVICES", "1")
        .env("WLR_RENDERER", "pixman");
    let server = Spawned::start("sway", "sway", &mut command, runtime.path());
    let socket = runtime.path().join("wayland-1");
    let started = std::time::Instant::now();
    while !socket.exists() {
        assert!(started.elapsed() < STARTUP_DEADLINE, "sway did not open its socket; stderr:\n{}", server.stderr());
        std::thread::sleep(Duration::from_millis(10));
    }
    Sway { _server: server, socket: socket.to_string_lossy().into_owned(), runtime }
}

/// A private session bus on a socket in `dir`: everything allowed, and service activation only
/// from `service_dir` (none by default), so the host's installed services never leak in. Run as
/// `command` (a `dbus-daemon` from [`desktop_command`], or a plain one); any user may connect,
/// so a root test can watch a bus that belongs to nobody.
pub fn private_bus(dir: &Path, service_dir: Option<&Path>, command: Command) -> (Spawned, String) {
    private_bus_of_type(dir, service_dir, command, "session")
}

/// A private bus of `kind` (`session`, or `system` for a daemon such as geoclue that talks to
/// the system bus; run it with `DBUS_SYSTEM_BUS_ADDRESS` set to the address). A system-type bus
/// denies replies and signals by default, so its policy allows receiving from everyone too.
pub fn private_bus_of_type(
    dir: &Path,
    service_dir: Option<&Path>,
    mut command: Command,
    kind: &str,
) -> (Spawned, String) {
    let config = dir.join("bus.conf");
    let service_dir = service_dir.map(|d| format!("<servicedir>{}</servicedir>", d.display())).unwrap_or_default();
    let config_text = format!(
        r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>{kind}</type>
  <listen>unix:path={}/bus</listen>
  <auth>EXTERNAL</auth>
  {service_dir}
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"#,
        dir.display()
    );
    std::fs::write(&config, config_text).expect("write bus config");
    let mut bus = Spawned::start(
        "dbus-daemon",
        "dbus-daemon",
        command.arg(format!("--config-file={}", config.display())).args(["--nofork", "--print-address"]),
        dir,
    );
    let address = bus.ready_line();
    (bus, address)
}

/// Waits until `name` has an owner on the bus at `address` (`process` must stay alive meanwhile).
pub async fn wait_for_name(address: &str, name: &str, process: &mut Spawned) {
    use std::str::FromStr;
    let address = zbus::Address::from_str(address).unwrap();
    let connection = zbus::connection::Builder::address(address).build().await.unwrap();
    let bus = zbus::fdo::DBusProxy::new(&connection).await.unwrap();
    let bus_name = zbus::names::BusName::try_from(name).unwrap();
    let started = std::time::Instant::now();
    loop {
        if bus.name_has_owner(bus_name.clone()).await.unwrap() {
            return;
        }
        if let Ok(Some(status)) = process.child.try_wait() {
            panic!("{} exited ({status}) before owning {name}; stderr:\n{}", process.name, process.stderr());
        }
        assert!(
            started.elapsed() < STARTUP_DEADLINE,
            "{} did not own {name}; stderr:\n{}",
            process.name,
            process.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

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
pub fn require(binary: &str, package: &str) {
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).any(|dir| dir.join(binary).is_file()))
        .unwrap_or(false);
    assert!(
        on_path,
        "`{binary}` is not installed; this test needs the Debian package `{package}` \
         (apt-get install -y --no-install-recommends {package})"
    );
}

/// A process a test started: killed by its PID and reaped when the guard drops, whatever
/// way the test ends.
pub struct Spawned {
    name: &'static str,
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
        let stderr_path = dir.join(format!("{name}.stderr"));
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
    _runtime: tempfile::TempDir,
}

/// Starts [`Sway`]. sway refuses to run as root, so as root it runs as `nobody` (setpriv), in a
/// directory that then belongs to nobody.
pub fn sway() -> Sway {
    require("sway", "sway");
    let runtime = tempfile::tempdir().unwrap();
    let config = runtime.path().join("sway.config");
    std::fs::write(&config, "output HEADLESS-1 resolution 640x480\n").unwrap();
    let root = nix::unistd::geteuid().is_root();
    let mut command = match root {
        true => {
            let (nobody, nogroup) = (nix::unistd::Uid::from_raw(65534), nix::unistd::Gid::from_raw(65534));
            nix::unistd::chown(runtime.path(), Some(nobody), Some(nogroup)).unwrap();
            let mut command = Command::new("setpriv");
            command.args(["--reuid=65534", "--regid=65534", "--clear-groups", "sway"]);
            command
        }
        false => Command::new("sway"),
    };
    command
        .arg("-c")
        .arg(&config)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("XDG_RUNTIME_DIR", runtime.path())
        .env("WLR_BACKENDS", "headless")
        .env("WLR_LIBINPUT_NO_DEVICES", "1")
        .env("WLR_RENDERER", "pixman");
    let (name, package) = if root { ("setpriv", "util-linux") } else { ("sway", "sway") };
    let server = Spawned::start(name, package, &mut command, runtime.path());
    let socket = runtime.path().join("wayland-1");
    let started = std::time::Instant::now();
    while !socket.exists() {
        assert!(started.elapsed() < STARTUP_DEADLINE, "sway did not open its socket; stderr:\n{}", server.stderr());
        std::thread::sleep(Duration::from_millis(10));
    }
    Sway { _server: server, socket: socket.to_string_lossy().into_owned(), _runtime: runtime }
}

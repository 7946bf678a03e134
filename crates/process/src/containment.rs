//! Optional containment of a program: what it may write, whether it reaches the network, how
//! much memory, CPU time and how many processes it may use, and no privilege gained by exec.
//!
//! The mechanisms are the kernel's own, each available to an unprivileged user:
//!
//! | rule | mechanism |
//! | --- | --- |
//! | filesystem | Landlock: everything readable and executable, writable only beneath the policy's paths (and `/dev/null`, `/dev/zero`, `/dev/full`) |
//! | no new privileges | `PR_SET_NO_NEW_PRIVS`: setuid bits and file capabilities grant nothing |
//! | network (when cut) | a network namespace of its own (only a loopback, down); Landlock's TCP connect/bind denial and abstract-socket scope on top, which are all that is left where no namespace can be had |
//! | memory | `RLIMIT_DATA` per process (heap and private writable mappings) |
//! | CPU time | `RLIMIT_CPU` per process (SIGXCPU, SIGKILL a second later) |
//! | processes | the reaper counts the tree's tasks and kills the whole tree past the limit, with the program at the lowest CPU priority so that what it counts cannot starve it; in a user namespace of its own, `RLIMIT_NPROC` makes forks past it fail at once instead |
//! | signals | Landlock's signal scope: nothing outside the sandbox (the reaper, the node) can be signalled |
//!
//! Two halves, because of where they run. [`Containment::prepare`] runs in the owner: it builds
//! the Landlock ruleset (opening path descriptors, allocating), reads the current limits and
//! decides, from what this kernel allows ([`kernel_support`], probed once per process), which
//! mechanism holds each rule; its [`ContainmentReport`] says so, rule by rule, with the reason
//! for each fallback. [`ChildPlan::apply`] runs in the program after the reaper's fork and
//! before exec, where only async-signal-safe calls are allowed: plain system calls on the
//! integers the plan holds (`unshare`, writes of the id maps, `setrlimit`, `setpriority`,
//! `prctl`, `landlock_restrict_self` on the prepared ruleset's descriptor). The reaper is never
//! contained: it must read `/proc` and signal and reap the whole tree.
//!
//! A plan that the kernel then refuses (a setup step fails in the child) is never run
//! uncontained: the program is not executed, and the spawn fails naming the step
//! ([`crate::ProcessError::Containment`]).

use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};
use nix::libc::{self, c_int, gid_t, uid_t};

use crate::sys;

/// The Landlock ABI whose access rights are asked for: the newest this was tested on (Linux
/// 6.18 offers 7). On an older kernel the `landlock` crate drops what the kernel cannot handle
/// (best effort) and the report says what that leaves open; a newer kernel is asked for no
/// right this code was not tested with.
const TARGET_ABI: ABI = ABI::V7;

/// The highest process limit accepted: the reaper counts the tree in a fixed-size table (it
/// must not allocate), which holds twice this.
pub const MAX_TASKS_LIMIT: u32 = 1024;

/// Device files every program may write (`cmd >/dev/null` opens it for writing and truncating).
const WRITABLE_DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

/// What a caller wants held around one program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainmentPolicy {
    /// Where the program may write: each path and everything beneath it. Everything else is
    /// read-only. Paths that do not exist are skipped (they grant nothing); `/` is refused.
    pub writable: Vec<PathBuf>,
    /// False cuts the program off the network.
    pub network: bool,
    /// Bytes of heap and private writable mappings per process (`RLIMIT_DATA`).
    pub memory_bytes: Option<u64>,
    /// Tasks (processes and threads) the program's tree may have at once, 1..=[`MAX_TASKS_LIMIT`].
    pub max_tasks: Option<u32>,
    /// CPU seconds per process (`RLIMIT_CPU`).
    pub cpu_seconds: Option<u64>,
}

/// One rule of the containment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Filesystem,
    NoNewPrivileges,
    Network,
    Memory,
    Processes,
    CpuTime,
    Signals,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::Filesystem => "filesystem",
            Rule::NoNewPrivileges => "no new privileges",
            Rule::Network => "network",
            Rule::Memory => "memory",
            Rule::Processes => "processes",
            Rule::CpuTime => "cpu time",
            Rule::Signals => "signals",
        }
    }
}

/// How far a rule holds on this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleState {
    Enforced,
    /// Held by a weaker mechanism than intended; the detail says what is left open.
    Partial,
    /// The kernel lacks what the rule needs; the detail says what.
    NotEnforced,
    /// The policy does not ask for it.
    NotRequested,
}

impl RuleState {
    pub fn name(self) -> &'static str {
        match self {
            RuleState::Enforced => "enforced",
            RuleState::Partial => "partly enforced",
            RuleState::NotEnforced => "NOT enforced",
            RuleState::NotRequested => "not asked for",
        }
    }

    /// A rule asked for that does not fully hold.
    pub fn is_fallback(self) -> bool {
        matches!(self, RuleState::Partial | RuleState::NotEnforced)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleReport {
    pub rule: Rule,
    pub state: RuleState,
    /// How it is held, or what is missing and why.
    pub detail: String,
}

/// What a containment holds, rule by rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainmentReport {
    pub rules: Vec<RuleReport>,
}

impl ContainmentReport {
    pub fn rule(&self, rule: Rule) -> Option<&RuleReport> {
        self.rules.iter().find(|report| report.rule == rule)
    }

    /// The rules asked for that do not fully hold.
    pub fn fallbacks(&self) -> impl Iterator<Item = &RuleReport> {
        self.rules.iter().filter(|report| report.state.is_fallback())
    }

    /// One line per rule: `rule: state: detail`.
    pub fn lines(&self) -> Vec<String> {
        self.rules.iter().map(|r| format!("{}: {}: {}", r.rule.name(), r.state.name(), r.detail)).collect()
    }

    /// What a caller should be told after a run: `None` if every rule asked for holds.
    pub fn fallback_note(&self) -> Option<String> {
        let missing: Vec<String> =
            self.fallbacks().map(|r| format!("{} {}: {}", r.rule.name(), r.state.name(), r.detail)).collect();
        (!missing.is_empty()).then(|| format!("sandbox fallback on this kernel: {}", missing.join("; ")))
    }
}

/// Why there is no such namespace for this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unavailable {
    pub errno: c_int,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.errno {
            libc::EPERM | libc::EACCES => {
                "not allowed for this user (kernel.unprivileged_userns_clone=0, AppArmor's \
                 kernel.apparmor_restrict_unprivileged_userns=1, or a container without CAP_SYS_ADMIN)"
            }
            libc::ENOSPC | libc::EUSERS => {
                "the namespace limit is reached (user.max_user_namespaces / max_net_namespaces)"
            }
            libc::EINVAL | libc::ENOSYS => "this kernel is built without user or network namespaces",
            _ => "the kernel refused it",
        };
        write!(f, "{why} ({})", io::Error::from_raw_os_error(self.errno))
    }
}

/// How this process can give a program a network namespace of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkNamespace {
    /// `unshare(CLONE_NEWNET)` as is (root, or CAP_SYS_ADMIN).
    Direct,
    /// Inside a new user namespace that maps the user's own ids (any user, where allowed).
    InUserNamespace,
}

/// What this kernel lets this process do, found by trying each thing in a throwaway child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSupport {
    /// The Landlock ABI version, or the errno of the version query (ENOSYS: not built in,
    /// EOPNOTSUPP: not enabled at boot).
    pub landlock_abi: Result<i32, c_int>,
    /// Running as root: `RLIMIT_NPROC` never binds uid 0.
    pub root: bool,
    /// A user namespace mapping the user's own uid and gid.
    pub user_namespace: Result<(), Unavailable>,
    pub network_namespace: Result<NetworkNamespace, Unavailable>,
}

impl KernelSupport {
    /// Probes the running kernel (three short-lived children).
    pub fn detect() -> KernelSupport {
        let ids = Some((sys::geteuid(), sys::getegid()));
        let probe = |flags: c_int, ids: Option<(uid_t, gid_t)>| {
            crate::tree::holding_spawn_lock(|| sys::try_in_child(&|| enter_namespaces(flags, ids)))
                .map_err(|error| Unavailable { errno: error.raw_os_error().unwrap_or(libc::EPERM) })
        };
        let user_namespace = probe(libc::CLONE_NEWUSER, ids);
        let network_namespace = match probe(libc::CLONE_NEWNET, None) {
            Ok(()) => Ok(NetworkNamespace::Direct),
            Err(direct) => match probe(libc::CLONE_NEWUSER | libc::CLONE_NEWNET, ids) {
                Ok(()) => Ok(NetworkNamespace::InUserNamespace),
                // As root the direct way is the one that should work: its reason is the news.
                Err(_) if sys::geteuid() == 0 => Err(direct),
                Err(in_user_namespace) => Err(in_user_namespace),
            },
        };
        KernelSupport {
            landlock_abi: sys::landlock_abi_version(),
            root: sys::geteuid() == 0,
            user_namespace,
            network_namespace,
        }
    }

    fn landlock(&self) -> Option<i32> {
        self.landlock_abi.ok()
    }
}

/// This kernel's support, probed on first use and then remembered for the life of the process.
pub fn kernel_support() -> &'static KernelSupport {
    static SUPPORT: OnceLock<KernelSupport> = OnceLock::new();
    SUPPORT.get_or_init(KernelSupport::detect)
}

/// What `policy` would hold on this kernel, rule by rule, without preparing anything (for
/// `clawmcp doctor` and the node's start-up summary).
pub fn expected_report(policy: &ContainmentPolicy) -> ContainmentReport {
    decide(kernel_support(), policy).report
}

/// Why a containment cannot be prepared. Each is a reason not to run at all.
#[derive(Debug, thiserror::Error)]
pub enum ContainmentError {
    #[error("{0}")]
    InvalidPolicy(String),
    #[error(
        "`{0}` is the root of the filesystem: making it writable would leave nothing read-only; \
         run the command in a project directory (cwd) or list narrower WritablePaths"
    )]
    RootWritable(PathBuf),
    #[error("cannot build the Landlock ruleset: {0}")]
    Landlock(String),
    #[error("cannot prepare the sandbox: {0}")]
    Io(#[from] io::Error),
}

/// A containment ready to be applied to programs: the Landlock ruleset built, the mechanisms
/// chosen. Reusable for any number of spawns while it lives.
#[derive(Debug)]
pub struct Containment {
    plan: ChildPlan,
    /// Owns the descriptor `plan` names; the program applies it and closes its copy.
    _ruleset: Option<OwnedFd>,
    writable: Vec<PathBuf>,
    report: ContainmentReport,
}

impl Containment {
    /// Builds the containment `policy` asks for, on this kernel.
    pub fn prepare(policy: &ContainmentPolicy) -> Result<Containment, ContainmentError> {
        Containment::prepare_with(policy, kernel_support())
    }

    fn prepare_with(policy: &ContainmentPolicy, support: &KernelSupport) -> Result<Containment, ContainmentError> {
        check_policy(policy)?;
        let decided = decide(support, policy);
        let mut writable = Vec::new();
        for path in &policy.writable {
            // A path that is not there grants nothing: leave it out (the report lists only
            // what was granted).
            let Ok(resolved) = path.canonicalize() else { continue };
            if resolved == Path::new("/") {
                return Err(ContainmentError::RootWritable(path.clone()));
            }
            if !writable.contains(&resolved) {
                writable.push(resolved);
            }
        }
        let ruleset = match decided.landlock {
            Some(_) => Some(build_ruleset(&writable, decided.landlock_network)?),
            None => None,
        };
        let mut limits = [NO_LIMIT; MAX_LIMITS];
        let mut count = 0;
        let mut push = |resource: c_int, soft: u64, hard: u64| -> io::Result<()> {
            // Only lowered, never raised: an unprivileged process cannot raise a hard limit,
            // and a lower one already in force is stricter than asked.
            let (_, current_hard) = sys::resource_limit(resource)?;
            let hard = hard.min(current_hard);
            limits[count] = Limit { resource, soft: soft.min(hard), hard };
            count += 1;
            Ok(())
        };
        // A crash of a contained program must not write a core of its whole memory into the
        // writable tree.
        push(libc::RLIMIT_CORE as c_int, 0, 0)?;
        if let Some(bytes) = policy.memory_bytes {
            push(libc::RLIMIT_DATA as c_int, bytes, bytes)?;
        }
        if let Some(seconds) = policy.cpu_seconds {
            // SIGXCPU at the soft limit (a program may catch it to report), SIGKILL a second later.
            push(libc::RLIMIT_CPU as c_int, seconds, seconds.saturating_add(1))?;
        }
        if let (Some(tasks), true) = (policy.max_tasks, decided.kernel_task_limit) {
            // The kernel refuses a fork when the user's task count in the namespace is already
            // at the limit; the program itself is one of them, so `tasks` allows exactly
            // `tasks` at once.
            push(libc::RLIMIT_NPROC as c_int, u64::from(tasks), u64::from(tasks))?;
        }
        let ruleset_fd = ruleset.as_ref().map(|fd| fd.as_raw_fd());
        // Where the kernel counts exactly, the reaper's count (which a tree churning at the
        // limit can make overshoot: /proc is not read atomically) stays out of it.
        let reaper_max_tasks = if decided.kernel_task_limit { None } else { policy.max_tasks };
        let plan = ChildPlan {
            namespaces: decided.namespaces,
            ids: decided.map_ids.then(|| (sys::geteuid(), sys::getegid())),
            limits,
            limit_count: count,
            landlock_ruleset: ruleset_fd,
            setup_report: None,
            max_tasks: reaper_max_tasks,
            lowest_priority: reaper_max_tasks.is_some(),
        };
        Ok(Containment { plan, _ruleset: ruleset, writable, report: decided.report })
    }

    /// What holds, rule by rule.
    pub fn report(&self) -> &ContainmentReport {
        &self.report
    }

    /// The paths the program may write beneath, resolved (the devices not included).
    pub fn writable(&self) -> &[PathBuf] {
        &self.writable
    }

    pub(crate) fn child_plan(&self) -> ChildPlan {
        self.plan
    }
}

fn check_policy(policy: &ContainmentPolicy) -> Result<(), ContainmentError> {
    let invalid = |what: String| Err(ContainmentError::InvalidPolicy(what));
    match policy.max_tasks {
        Some(0) => return invalid("a process limit of 0 would not even let the program start".into()),
        Some(tasks) if tasks > MAX_TASKS_LIMIT => {
            return invalid(format!("a process limit of {tasks} is above the most supported, {MAX_TASKS_LIMIT}"));
        }
        _ => {}
    }
    if policy.memory_bytes == Some(0) {
        return invalid("a memory limit of 0 would not even let the program start".into());
    }
    if policy.cpu_seconds == Some(0) {
        return invalid("a CPU time limit of 0 would kill the program at once".into());
    }
    Ok(())
}

/// Which mechanism holds each rule, given what the kernel allows.
struct Decision {
    /// The Landlock ABI the ruleset is built for; `None` without Landlock.
    landlock: Option<i32>,
    /// Landlock denies TCP and abstract unix sockets: the network is cut but no namespace can be had.
    landlock_network: bool,
    namespaces: c_int,
    map_ids: bool,
    kernel_task_limit: bool,
    report: ContainmentReport,
}

fn decide(support: &KernelSupport, policy: &ContainmentPolicy) -> Decision {
    let landlock = support.landlock().map(|abi| abi.min(TARGET_ABI as i32));
    let (namespaces, map_ids) = match (policy.network, support.network_namespace) {
        (false, Ok(NetworkNamespace::Direct)) => (libc::CLONE_NEWNET, false),
        (false, Ok(NetworkNamespace::InUserNamespace)) => (libc::CLONE_NEWUSER | libc::CLONE_NEWNET, true),
        _ => (0, false),
    };
    // In a user namespace of its own the user's task count starts from the program alone, so
    // RLIMIT_NPROC counts exactly the tree (except for root, which it never binds).
    let kernel_task_limit = policy.max_tasks.is_some() && map_ids && !support.root;
    let mut rules = Vec::new();
    let mut rule = |rule: Rule, state: RuleState, detail: String| rules.push(RuleReport { rule, state, detail });

    let landlock_missing = || match support.landlock_abi {
        Err(libc::EOPNOTSUPP) => {
            "Landlock is built in but not enabled (add `landlock` to the kernel's lsm= boot parameter)"
        }
        _ => "this kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)",
    };
    match landlock {
        None => rule(
            Rule::Filesystem,
            RuleState::NotEnforced,
            format!("{}: the program can write wherever the user can", landlock_missing()),
        ),
        Some(abi) if abi < 3 => rule(
            Rule::Filesystem,
            RuleState::Partial,
            format!(
                "Landlock ABI {abi}: read-only except beneath the writable paths, but truncating an existing \
                 file elsewhere is not blocked (that needs ABI 3, Linux 6.2)"
            ),
        ),
        Some(abi) => rule(
            Rule::Filesystem,
            RuleState::Enforced,
            format!("Landlock ABI {abi}: read-only except beneath the writable paths"),
        ),
    }
    rule(Rule::NoNewPrivileges, RuleState::Enforced, "PR_SET_NO_NEW_PRIVS: exec grants no privilege".into());

    let tcp_denied = landlock.is_some_and(|abi| abi >= 4);
    match (policy.network, support.network_namespace) {
        (true, _) => rule(Rule::Network, RuleState::NotRequested, "allowed (Network is true)".into()),
        (false, Ok(how)) => rule(
            Rule::Network,
            RuleState::Enforced,
            format!(
                "a network namespace of its own{}, with only a loopback that is down",
                match how {
                    NetworkNamespace::Direct => "",
                    NetworkNamespace::InUserNamespace => " (in a user namespace mapping only this user)",
                },
            ),
        ),
        (false, Err(why)) if tcp_denied => rule(
            Rule::Network,
            RuleState::Partial,
            format!(
                "Landlock denies TCP connect and bind and abstract unix sockets, but UDP and other sockets \
                 still reach the network: no network namespace, {why}"
            ),
        ),
        (false, Err(why)) => rule(
            Rule::Network,
            RuleState::NotEnforced,
            format!("no network namespace, {why}; and TCP denial needs Landlock ABI 4 (Linux 6.7)"),
        ),
    }

    match policy.memory_bytes {
        Some(bytes) => rule(
            Rule::Memory,
            RuleState::Enforced,
            format!(
                "RLIMIT_DATA {} per process (heap and private writable mappings; allocations past it fail)",
                mebibytes(bytes)
            ),
        ),
        None => rule(Rule::Memory, RuleState::NotRequested, "no limit".into()),
    }
    match policy.max_tasks {
        Some(tasks) => rule(
            Rule::Processes,
            RuleState::Enforced,
            if kernel_task_limit {
                format!(
                    "at most {tasks} tasks (processes and threads) at once: RLIMIT_NPROC in the run's own user \
                     namespace makes forks past it fail (EAGAIN)"
                )
            } else {
                format!(
                    "at most {tasks} tasks (processes and threads) at once: the reaper counts the tree every {} ms \
                     and kills all of it past the limit; the program runs at nice {} so that it cannot starve the \
                     reaper",
                    crate::reaper::TASK_COUNT_POLL.as_millis(),
                    sys::LOWEST_PRIORITY,
                )
            },
        ),
        None => rule(Rule::Processes, RuleState::NotRequested, "no limit".into()),
    }
    match policy.cpu_seconds {
        Some(seconds) => rule(
            Rule::CpuTime,
            RuleState::Enforced,
            format!("RLIMIT_CPU {seconds} s per process (SIGXCPU, then SIGKILL a second later)"),
        ),
        None => rule(Rule::CpuTime, RuleState::NotRequested, "no limit".into()),
    }
    match landlock {
        Some(abi) if abi >= 6 => rule(
            Rule::Signals,
            RuleState::Enforced,
            "Landlock scope: no process outside the sandbox can be signalled".into(),
        ),
        _ => rule(
            Rule::Signals,
            RuleState::NotEnforced,
            "processes outside the sandbox can be signalled: the scope needs Landlock ABI 6 (Linux 6.12)".into(),
        ),
    }
    let landlock_network = !policy.network && support.network_namespace.is_err() && tcp_denied;
    Decision { landlock, landlock_network, namespaces, map_ids, kernel_task_limit, report: ContainmentReport { rules } }
}

fn mebibytes(bytes: u64) -> String {
    if bytes.is_multiple_of(1024 * 1024) { format!("{} MiB", bytes / (1024 * 1024)) } else { format!("{bytes} bytes") }
}

/// The ruleset: read and execute everywhere; everything (write, create, remove, rename,
/// truncate) beneath `writable` and on the harmless devices; no signals outside, always; and
/// with `cut_network` (the fallback where no network namespace can be had) no TCP and no
/// abstract unix sockets outside. (In a network namespace a connect fails with ENETUNREACH,
/// which says what happened better than Landlock's EACCES.)
fn build_ruleset(writable: &[PathBuf], cut_network: bool) -> Result<OwnedFd, ContainmentError> {
    let failed = |error: landlock::RulesetError| ContainmentError::Landlock(error.to_string());
    let abi = TARGET_ABI;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(failed)?;
    let mut scopes: BitFlags<Scope> = Scope::Signal.into();
    if cut_network {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(failed)?;
        scopes |= Scope::AbstractUnixSocket;
    }
    let ruleset = ruleset.scope(scopes).map_err(failed)?;
    let open = |path: &Path| PathFd::new(path).map_err(|error| ContainmentError::Landlock(error.to_string()));
    let mut created = ruleset
        .create()
        .map_err(failed)?
        .add_rule(PathBeneath::new(open(Path::new("/"))?, AccessFs::from_read(abi)))
        .map_err(failed)?;
    for path in writable {
        created = created.add_rule(PathBeneath::new(open(path)?, AccessFs::from_all(abi))).map_err(failed)?;
    }
    for device in WRITABLE_DEVICES.map(Path::new).into_iter().filter(|device| device.exists()) {
        let access = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
        created = created.add_rule(PathBeneath::new(open(device)?, access)).map_err(failed)?;
    }
    let descriptor: Option<OwnedFd> = created.into();
    let Some(descriptor) = descriptor else {
        return Err(ContainmentError::Landlock(
            "the kernel reports Landlock but the landlock crate created no ruleset".into(),
        ));
    };
    // Never a stdio number, which std's dup2 of the child's stdio would overwrite.
    Ok(sys::duplicate_above_stdio(descriptor.as_fd())?)
}

/// One resource limit to set.
#[derive(Debug, Clone, Copy)]
struct Limit {
    resource: c_int,
    soft: u64,
    hard: u64,
}

const NO_LIMIT: Limit = Limit { resource: -1, soft: 0, hard: 0 };
const MAX_LIMITS: usize = 4;

/// What the program does to itself after the fork: plain data, so applying it allocates nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChildPlan {
    /// `unshare` flags; 0 for none.
    namespaces: c_int,
    /// With a user namespace: the uid and gid to map to themselves.
    ids: Option<(uid_t, gid_t)>,
    limits: [Limit; MAX_LIMITS],
    limit_count: usize,
    landlock_ruleset: Option<c_int>,
    /// Where a failed step is reported to the owner (see [`SetupFailure`]).
    setup_report: Option<c_int>,
    /// The reaper's task limit.
    pub(crate) max_tasks: Option<u32>,
    /// The program runs at the lowest CPU priority (with the reaper's task limit: a fork bomb
    /// at the reaper's own priority starves the reaper that must count and kill it; on 2
    /// busy cores it took over a second, and a thousand processes, to be caught).
    lowest_priority: bool,
}

/// The reaper's part of a containment: the program leads a process group of its own, and the
/// tree may have at most `max_tasks` tasks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Confinement {
    pub max_tasks: Option<u32>,
}

/// The steps of [`ChildPlan::apply`], as reported when one fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Step {
    ProcessGroup = 6,
    Namespaces = 1,
    IdMaps = 2,
    Limits = 3,
    Priority = 7,
    NoNewPrivileges = 4,
    Landlock = 5,
}

impl Step {
    fn from_code(code: u8) -> Option<Step> {
        [
            Step::ProcessGroup,
            Step::Namespaces,
            Step::IdMaps,
            Step::Limits,
            Step::Priority,
            Step::NoNewPrivileges,
            Step::Landlock,
        ]
        .into_iter()
        .find(|step| *step as u8 == code)
    }

    fn describe(self) -> &'static str {
        match self {
            Step::ProcessGroup => "starting a process group of its own (setpgid)",
            Step::Namespaces => "entering a network or user namespace of its own (unshare)",
            Step::IdMaps => "mapping the user's ids into its user namespace (/proc/self/uid_map)",
            Step::Limits => "setting its resource limits (setrlimit)",
            Step::Priority => "lowering its CPU priority below its reaper's (setpriority)",
            Step::NoNewPrivileges => "setting no_new_privs (prctl)",
            Step::Landlock => "applying the Landlock ruleset (landlock_restrict_self)",
        }
    }
}

/// The size of a setup failure record: the step, then the errno.
pub(crate) const SETUP_RECORD: usize = 5;

/// A step of the containment that failed in the program, which therefore never ran.
#[derive(Debug)]
pub(crate) struct SetupFailure {
    pub step: &'static str,
    pub source: io::Error,
}

impl SetupFailure {
    pub(crate) fn parse(record: &[u8; SETUP_RECORD]) -> Option<SetupFailure> {
        let step = Step::from_code(record[0])?;
        let errno = c_int::from_ne_bytes([record[1], record[2], record[3], record[4]]);
        Some(SetupFailure { step: step.describe(), source: io::Error::from_raw_os_error(errno) })
    }
}

impl ChildPlan {
    /// What the reaper must know of a contained program.
    pub(crate) fn confinement(&self) -> Confinement {
        Confinement { max_tasks: self.max_tasks }
    }

    pub(crate) fn reporting_to(mut self, fd: c_int) -> ChildPlan {
        self.setup_report = Some(fd);
        self
    }

    /// Contains the calling process (the program, between the reaper's fork and exec). Order
    /// matters: the namespaces first (the id maps are written through /proc, which Landlock
    /// would then forbid, and a user namespace created under RLIMIT_NPROC would inherit it as
    /// its ceiling for the whole user), then the limits, then no_new_privs, which Landlock
    /// requires, then Landlock.
    pub(crate) fn apply(&self) -> io::Result<()> {
        // A group of its own, so that the reaper can kill all of it with one kill(2) that no
        // concurrent fork escapes (a fork bomb outruns any walk of /proc); whatever leaves the
        // group is still found by the walk.
        self.step(Step::ProcessGroup, sys::set_own_process_group())?;
        if self.namespaces != 0 {
            self.step(Step::Namespaces, sys::unshare(self.namespaces))?;
            if let Some((uid, gid)) = self.ids {
                self.step(Step::IdMaps, write_id_maps(uid, gid))?;
            }
        }
        for limit in &self.limits[..self.limit_count] {
            self.step(Step::Limits, sys::set_resource_limit(limit.resource, limit.soft, limit.hard))?;
        }
        if self.lowest_priority {
            self.step(Step::Priority, sys::set_lowest_priority())?;
        }
        self.step(Step::NoNewPrivileges, sys::set_no_new_privileges())?;
        if let Some(ruleset) = self.landlock_ruleset {
            self.step(Step::Landlock, sys::landlock_restrict_self(ruleset))?;
            sys::close(ruleset);
        }
        Ok(())
    }

    /// Passes `outcome` on, first reporting a failure of `step` to the owner.
    fn step(&self, step: Step, outcome: io::Result<()>) -> io::Result<()> {
        if let (Err(error), Some(fd)) = (&outcome, self.setup_report) {
            let errno = error.raw_os_error().unwrap_or(libc::EINVAL).to_ne_bytes();
            let record = [step as u8, errno[0], errno[1], errno[2], errno[3]];
            sys::write_all(fd, &record);
        }
        outcome
    }
}

/// `unshare(flags)`, then, with `ids`, the maps of a new user namespace: the user's own uid and
/// gid and nothing else (the only mapping an unprivileged process may write, after giving up
/// `setgroups`). Async-signal-safe: the lines are formatted on the stack.
fn enter_namespaces(flags: c_int, ids: Option<(uid_t, gid_t)>) -> io::Result<()> {
    sys::unshare(flags)?;
    match ids {
        Some((uid, gid)) if flags & libc::CLONE_NEWUSER != 0 => write_id_maps(uid, gid),
        _ => Ok(()),
    }
}

fn write_id_maps(uid: uid_t, gid: gid_t) -> io::Result<()> {
    let mut line = [0u8; 40];
    sys::write_small_file(c"/proc/self/setgroups", b"deny")?;
    sys::write_small_file(c"/proc/self/uid_map", id_map_line(uid, &mut line))?;
    sys::write_small_file(c"/proc/self/gid_map", id_map_line(gid, &mut line))
}

/// `"<id> <id> 1\n"` in `buffer`.
fn id_map_line(id: u32, buffer: &mut [u8; 40]) -> &[u8] {
    let mut digits = [0u8; 10];
    let id = sys::format_decimal(id, &mut digits);
    sys::concat_into(&[id, b" ", id, b" 1\n"], buffer)
}

#[cfg(test)]
mod tests;

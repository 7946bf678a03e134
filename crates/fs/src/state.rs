//! Trust rules for clawmcp's own state: the directories it keeps state in and the files in them
//! (the MCP token, `settings.json`, `exec-approvals.json`, the gateway device identity, the tools
//! bridge's snapshots and pending yields).
//!
//! Whoever can write one of these files can run commands as the user running clawmcp (a planted
//! policy allows everything; a swapped token lets them in). So state is used only when nobody else
//! could have written it:
//!
//! - **Directories** ([`check_private_dir`], and [`crate::create_private_dir`] for an existing one)
//!   must be owned by the effective user and not writable by group or others (sticky or not): in
//!   such a directory another user could rename, replace or plant any file. Readable is allowed
//!   (with a warning), since it cannot change what we read.
//! - **Files** ([`read_state_file`]) are opened with `O_NOFOLLOW | O_NONBLOCK` and judged by
//!   `fstat` on the opened descriptor, so there is no check-then-open race: a symlink, a FIFO, a
//!   device, a second hard link, another owner, or write permission for group/others is refused.
//!   A file readable by others (a secret that may have been read) has its mode fixed to 0600 on the
//!   descriptor, with a warning. Reads stop at a limit counted in bytes read.
//!
//! Refusals are `io::Error`s (kind `PermissionDenied` or `InvalidData`) whose message says what is
//! wrong, why it matters and the exact command that fixes it, so every caller can pass them on as
//! they are.

use std::fmt;
use std::fs::{File, Metadata};
use std::io;
use std::path::Path;
use std::time::Duration;

use crate::open::{FileKind, Symlinks, is_refused_symlink, not_regular_kind, open_regular, read_bounded};

/// Why a state directory or file is not used.
#[derive(Debug, thiserror::Error)]
#[error("refusing to use `{path}`: {problem}. {fix}")]
pub struct Untrusted {
    pub path: String,
    pub problem: String,
    /// What the user should do, as a command where there is one.
    pub fix: String,
}

impl Untrusted {
    fn error(path: &Path, problem: impl fmt::Display, fix: impl fmt::Display) -> io::Error {
        let error = Untrusted { path: path.display().to_string(), problem: problem.to_string(), fix: fix.to_string() };
        io::Error::new(io::ErrorKind::PermissionDenied, error)
    }
}

/// The [`Untrusted`] refusal inside `error`, if that is what it is.
pub fn untrusted(error: &io::Error) -> Option<&Untrusted> {
    error.get_ref().and_then(|inner| inner.downcast_ref::<Untrusted>())
}

/// Checks that an existing directory is safe to keep state in: owned by us and writable by
/// nobody else. The path may be a symlink (dotfile setups link `~/.config`); its target is judged.
pub fn check_private_dir(dir: &Path) -> io::Result<()> {
    let meta = std::fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} is not a directory", dir.display())));
    }
    check_owner_and_writers(dir, &meta, Kind::Directory)?;
    crate::warn_if_exposed(dir, &meta, "chmod 700");
    Ok(())
}

/// What [`read_state_file`] accepts beyond the fixed rules.
#[derive(Debug, Clone, Copy)]
pub struct StateRules {
    /// The most bytes read; a larger file is refused, not cut.
    pub max_bytes: u64,
    /// What happens to a file that group or others can read.
    pub exposed: Exposed,
}

/// The treatment of a state file readable by group or others (but writable only by us).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposed {
    /// Make it 0600 and use it, with a warning (settings, policies, the MCP token: the user can
    /// rotate the token, and losing it would lock out configured clients).
    MakePrivate,
    /// Refuse it (a private key: the user decides whether it leaked).
    Refuse,
}

impl StateRules {
    /// Most state: up to `max_bytes`, made private if readable.
    pub const fn private(max_bytes: u64) -> Self {
        StateRules { max_bytes, exposed: Exposed::MakePrivate }
    }
}

/// Reads one of clawmcp's state files under the rules in the module doc. `Ok(None)` when it does
/// not exist.
pub fn read_state_file(path: &Path, rules: StateRules) -> io::Result<Option<Vec<u8>>> {
    let (mut file, _meta) = match open_state_file(path, rules.exposed) {
        Ok(opened) => opened,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let read = read_bounded(&mut file, rules.max_bytes)?;
    if read.truncated {
        let problem = format!("it is larger than the {} bytes a state file may have", rules.max_bytes);
        let error = Untrusted {
            path: path.display().to_string(),
            problem,
            fix: format!("Remove or shorten it: `rm {}`", quote(path)),
        };
        return Err(io::Error::new(io::ErrorKind::InvalidData, error));
    }
    Ok(Some(read.bytes))
}

/// Opens a state file and checks it (see the module doc) without reading it.
pub fn open_state_file(path: &Path, exposed: Exposed) -> io::Result<(File, Metadata)> {
    let (file, meta) = open_current(path)?;
    check_state_file(path, &file, &meta, exposed)?;
    Ok((file, meta))
}

/// Opens `path` for appending under the same rules as a state file: created 0600 when missing;
/// an existing file must be a regular file (never followed through a symlink, never a FIFO:
/// opened non-blocking, a FIFO without a reader is refused instead of waited on), ours, with one
/// name and no other writer; one that others can read is made 0600 with a warning. For logs,
/// which may hold what a user would not show everyone (paths, tool names, gateway errors).
pub fn open_private_append(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    {
        use nix::fcntl::OFlag;
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
        options.custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY).bits());
    }
    let file = options.open(path).map_err(|error| {
        let error = match error.raw_os_error().map(nix::errno::Errno::from_raw) {
            // A FIFO nobody reads (ENXIO) and a symlink (ELOOP) are named as such.
            Some(nix::errno::Errno::ENXIO) => std::fs::symlink_metadata(path)
                .ok()
                .as_ref()
                .and_then(FileKind::of)
                .map_or(error, |kind| io::Error::new(io::ErrorKind::InvalidInput, crate::NotRegular(kind))),
            _ => error,
        };
        refusal_for_open(path, error)
    })?;
    let meta = file.metadata()?;
    if let Some(kind) = FileKind::of(&meta) {
        return Err(refusal_for_open(path, io::Error::new(io::ErrorKind::InvalidInput, crate::NotRegular(kind))));
    }
    check_state_file(path, &file, &meta, Exposed::MakePrivate)?;
    Ok(file)
}

/// The rules of the module doc for an opened regular file: owner, writers, one name, exposure.
fn check_state_file(path: &Path, file: &File, meta: &Metadata, exposed: Exposed) -> io::Result<()> {
    check_owner_and_writers(path, meta, Kind::File)?;
    #[cfg(unix)]
    {
        let links = std::os::unix::fs::MetadataExt::nlink(meta);
        if links != 1 {
            return Err(Untrusted::error(
                path,
                format_args!("it has {links} hard links, so a name someone else controls may point at it"),
                format_args!("Give it a single name: `cp {0} {0}.new && mv {0}.new {0}`", quote(path)),
            ));
        }
    }
    handle_exposed_mode(path, file, meta, exposed)
}

/// How long a file replaced while being opened is opened again: time, not a count, because a
/// reader preempted between `open` and `fstat` on a loaded machine can see dozens of saves in a
/// row (32 quick retries were once not enough in CI). After the first few quick retries each
/// waits a millisecond, so a writer that never stops costs this reader little.
const REPLACED_WAIT: Duration = Duration::from_secs(2);
const QUICK_RETRIES: usize = 8;

/// Opens `path`; a descriptor whose file has no name left (0 links) was opened just before a
/// writer renamed a new version over it (every state file is written that way) or removed it,
/// so the name is opened again: a reader racing an atomic save sees the new file, never a
/// refusal (a settings reload that failed that way would switch `system.run` off).
fn open_current(path: &Path) -> io::Result<(File, Metadata)> {
    let started = std::time::Instant::now();
    let mut attempt = 0;
    loop {
        let (file, meta) = open_regular(path, Symlinks::Refuse).map_err(|e| refusal_for_open(path, e))?;
        #[cfg(unix)]
        if std::os::unix::fs::MetadataExt::nlink(&meta) == 0 && started.elapsed() < REPLACED_WAIT {
            attempt += 1;
            if attempt > QUICK_RETRIES {
                std::thread::sleep(Duration::from_millis(1));
            }
            continue;
        }
        return Ok((file, meta));
    }
}

fn refusal_for_open(path: &Path, error: io::Error) -> io::Error {
    if is_refused_symlink(&error) {
        return Untrusted::error(
            path,
            "it is a symbolic link, and state files are never read through links (another user could point it anywhere)",
            format_args!(
                "Replace the link with the file itself: `cp --remove-destination \"$(readlink -f {0})\" {0}`",
                quote(path)
            ),
        );
    }
    if let Some(kind) = not_regular_kind(&error) {
        return Untrusted::error(
            path,
            format_args!("it is {kind}, not a regular file"),
            match kind {
                FileKind::Directory => format!("Move it away: `mv {0} {0}.bak`", quote(path)),
                _ => format!("Remove it (clawmcp recreates what it needs): `rm {}`", quote(path)),
            },
        );
    }
    error
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Directory,
    File,
}

#[cfg(unix)]
fn check_owner_and_writers(path: &Path, meta: &Metadata, kind: Kind) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid();
    if meta.uid() != me.as_raw() {
        let what = if kind == Kind::Directory { "directory" } else { "file" };
        let fix = if kind == Kind::Directory {
            format!(
                "Use a data directory of your own (`--data-dir DIR`), or if this one is yours: `chown {} {}`",
                user_name(me.as_raw()),
                quote(path)
            )
        } else {
            format!(
                "Check what it holds, then make it yours: `chown {} {}`, or remove it",
                user_name(me.as_raw()),
                quote(path)
            )
        };
        return Err(Untrusted::error(
            path,
            format_args!(
                "the {what} is owned by {} but clawmcp runs as {}, and whoever owns it can change what clawmcp trusts",
                user_name(meta.uid()),
                user_name(me.as_raw())
            ),
            fix,
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        let (who, fix) = match kind {
            Kind::Directory => ("any file in it", format!("`chmod 700 {}`", quote(path))),
            Kind::File => ("it", format!("check what it holds, then `chmod 600 {}`", quote(path))),
        };
        return Err(Untrusted::error(
            path,
            format_args!("it is writable by {} (mode {mode:04o}), so another user could replace {who}", writers(mode)),
            format_args!("Make it private: {fix}"),
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_owner_and_writers(_path: &Path, _meta: &Metadata, _kind: Kind) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn writers(mode: u32) -> &'static str {
    match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (true, true) => "its group and all users",
        (true, false) => "its group",
        _ => "all users",
    }
}

/// A state file readable by group or others is refused, or gets mode 0600 (on the descriptor:
/// the file we checked is the file we fix) and stays in use: it is ours and nobody else could
/// write it, but a secret in it may have been read, which the warning says.
#[cfg(unix)]
fn handle_exposed_mode(path: &Path, file: &File, meta: &Metadata, exposed: Exposed) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 == 0 {
        return Ok(());
    }
    if exposed == Exposed::Refuse {
        return Err(Untrusted::error(
            path,
            format_args!("it holds a secret and is readable by other users (mode {mode:04o}), so it may have leaked"),
            format_args!(
                "If nobody else could have read it: `chmod 600 {0}`; otherwise remove it and let clawmcp create a new one",
                quote(path)
            ),
        ));
    }
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    tracing::warn!(
        path = %path.display(),
        was = format_args!("{mode:04o}"),
        "state file was readable by other users; its mode is now 0600 (if it holds a secret, replace it: \
         `clawmcp token --reset` for the MCP token)"
    );
    Ok(())
}

#[cfg(not(unix))]
fn handle_exposed_mode(_path: &Path, _file: &File, _meta: &Metadata, _exposed: Exposed) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn user_name(uid: u32) -> String {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(user)) => format!("{} (uid {uid})", user.name),
        _ => format!("uid {uid}"),
    }
}

/// A path as a shell word for the fix commands.
fn quote(path: &Path) -> String {
    let text = path.display().to_string();
    if text.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b)) {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    use super::*;

    const LIMITS: StateRules = StateRules::private(64);

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
    }

    fn set_mode(path: &Path, mode: u32) {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    fn private_dir() -> (tempfile::TempDir, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("state");
        crate::create_private_dir(&dir).unwrap();
        (root, dir)
    }

    fn refusal(error: io::Error) -> String {
        assert!(untrusted(&error).is_some(), "not a trust refusal: {error:?}");
        error.to_string()
    }

    #[test]
    fn a_reader_racing_atomic_saves_always_gets_a_whole_file_never_a_refusal() {
        let (_root, dir) = private_dir();
        let file = dir.join("status.json");
        crate::write_private_atomic(&file, b"version-0").unwrap();
        let writer = {
            let file = file.clone();
            std::thread::spawn(move || {
                for i in 1..=2000 {
                    crate::write_private_atomic(&file, format!("version-{i}").as_bytes()).unwrap();
                }
            })
        };
        let mut reads = 0;
        while !writer.is_finished() || reads == 0 {
            let bytes = read_state_file(&file, LIMITS).expect("a save in progress is not a refusal").unwrap();
            let text = String::from_utf8(bytes).unwrap();
            assert!(text.starts_with("version-"), "a whole file, not a torn one: {text:?}");
            reads += 1;
        }
        writer.join().unwrap();
    }

    /// A uid that is not ours: root's files are somebody else's for a normal user, and a root
    /// test can give a file to `nobody`.
    fn give_away(path: &Path) -> bool {
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::lchown(path, Some(65534), Some(65534)).unwrap();
            true
        } else {
            false
        }
    }

    #[test]
    fn an_appended_file_is_created_0600_and_appended_to() {
        use std::io::Write;
        let (_root, dir) = private_dir();
        let log = dir.join("node.log");
        open_private_append(&log).unwrap().write_all(b"one\n").unwrap();
        assert_eq!(mode(&log), 0o600);
        open_private_append(&log).unwrap().write_all(b"two\n").unwrap();
        assert_eq!(fs::read_to_string(&log).unwrap(), "one\ntwo\n");
        // One that others can read is made private; one others can write is refused.
        set_mode(&log, 0o644);
        open_private_append(&log).unwrap();
        assert_eq!(mode(&log), 0o600);
        set_mode(&log, 0o622);
        assert!(refusal(open_private_append(&log).unwrap_err()).contains("writable"), "group/others may write");
        assert_eq!(fs::read_to_string(&log).unwrap(), "one\ntwo\n");
    }

    #[test]
    fn an_appended_file_is_never_a_link_a_fifo_or_another_users() {
        let (_root, dir) = private_dir();
        let target = dir.join("target");
        fs::write(&target, "kept").unwrap();
        let link = dir.join("link.log");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(refusal(open_private_append(&link).unwrap_err()).contains("symbolic link"));
        let dangling = dir.join("dangling.log");
        std::os::unix::fs::symlink(dir.join("absent"), &dangling).unwrap();
        assert!(refusal(open_private_append(&dangling).unwrap_err()).contains("symbolic link"));
        assert!(!dir.join("absent").exists(), "no file created through a dangling link");
        assert_eq!(fs::read_to_string(&target).unwrap(), "kept");
        // A FIFO nobody reads: refused at once, not waited on.
        let fifo = dir.join("fifo.log");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(refusal(open_private_append(&fifo).unwrap_err()).contains("FIFO"));
        let linked = dir.join("linked.log");
        fs::write(&linked, "").unwrap();
        fs::hard_link(&linked, dir.join("second-name")).unwrap();
        assert!(refusal(open_private_append(&linked).unwrap_err()).contains("hard links"));
        let theirs = dir.join("theirs.log");
        fs::write(&theirs, "").unwrap();
        set_mode(&theirs, 0o600);
        if give_away(&theirs) {
            assert!(refusal(open_private_append(&theirs).unwrap_err()).contains("chown"));
        }
    }

    #[test]
    fn a_private_file_is_read_and_a_missing_one_is_none() {
        let (_root, dir) = private_dir();
        let file = dir.join("f");
        crate::write_private_atomic(&file, b"hello").unwrap();
        assert_eq!(read_state_file(&file, LIMITS).unwrap().unwrap(), b"hello");
        assert_eq!(read_state_file(&dir.join("absent"), LIMITS).unwrap(), None);
    }

    #[test]
    fn size_is_refused_one_byte_past_the_limit() {
        let (_root, dir) = private_dir();
        let file = dir.join("f");
        crate::write_private_atomic(&file, &[b'a'; 64]).unwrap();
        assert_eq!(read_state_file(&file, LIMITS).unwrap().unwrap().len(), 64);
        crate::write_private_atomic(&file, &[b'a'; 65]).unwrap();
        let message = refusal(read_state_file(&file, LIMITS).unwrap_err());
        assert!(message.contains("larger than the 64 bytes"), "{message}");
    }

    #[test]
    fn group_or_world_writable_files_are_refused_readable_ones_fixed() {
        let (_root, dir) = private_dir();
        let file = dir.join("f");
        crate::write_private_atomic(&file, b"x").unwrap();
        for writable in [0o620, 0o602, 0o666] {
            set_mode(&file, writable);
            let message = refusal(read_state_file(&file, LIMITS).unwrap_err());
            assert!(message.contains("writable by") && message.contains("chmod 600"), "{message}");
            assert_eq!(mode(&file), writable, "a refused file is left as it is");
        }
        set_mode(&file, 0o640);
        let secret = StateRules { exposed: Exposed::Refuse, ..LIMITS };
        let message = refusal(read_state_file(&file, secret).unwrap_err());
        assert!(message.contains("may have leaked") && message.contains("chmod 600"), "{message}");
        assert_eq!(mode(&file), 0o640, "a refused secret is left as it is");
        set_mode(&file, 0o644);
        assert_eq!(read_state_file(&file, LIMITS).unwrap().unwrap(), b"x");
        assert_eq!(mode(&file), 0o600, "a readable state file is made private");
    }

    #[test]
    fn symlinks_fifos_and_hard_links_are_refused_without_blocking() {
        let (_root, dir) = private_dir();
        let real = dir.join("real");
        crate::write_private_atomic(&real, b"x").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(refusal(read_state_file(&link, LIMITS).unwrap_err()).contains("symbolic link"));
        let fifo = dir.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(refusal(read_state_file(&fifo, LIMITS).unwrap_err()).contains("FIFO"));
        let second = dir.join("second");
        fs::hard_link(&real, &second).unwrap();
        assert!(refusal(read_state_file(&real, LIMITS).unwrap_err()).contains("2 hard links"));
        let sub = dir.join("sub");
        fs::create_dir(&sub).unwrap();
        assert!(refusal(read_state_file(&sub, LIMITS).unwrap_err()).contains("a directory"));
    }

    #[test]
    fn writable_directories_are_refused_sticky_or_not() {
        let (_root, dir) = private_dir();
        check_private_dir(&dir).unwrap();
        for writable in [0o770, 0o707, 0o777, 0o1777, 0o1770] {
            set_mode(&dir, writable);
            let message = refusal(check_private_dir(&dir).unwrap_err());
            assert!(message.contains("chmod 700"), "{message}");
            assert!(refusal(crate::create_private_dir(&dir).unwrap_err()).contains("writable by"));
        }
        set_mode(&dir, 0o755);
        check_private_dir(&dir).expect("readable by others is allowed (warned)");
    }

    #[test]
    fn another_users_directory_or_file_is_refused() {
        let (_root, dir) = private_dir();
        let file = dir.join("f");
        crate::write_private_atomic(&file, b"x").unwrap();
        if give_away(&file) {
            let message = refusal(read_state_file(&file, LIMITS).unwrap_err());
            assert!(message.contains("owned by nobody") || message.contains("owned by uid 65534"), "{message}");
            give_away(&dir);
            let message = refusal(check_private_dir(&dir).unwrap_err());
            assert!(message.contains("--data-dir"), "{message}");
        } else {
            // As a normal user, root's own directories are someone else's.
            let message = refusal(check_private_dir(Path::new("/")).unwrap_err());
            assert!(message.contains("owned by root"), "{message}");
        }
    }

    #[test]
    fn fix_commands_quote_odd_paths() {
        assert_eq!(quote(Path::new("/a/b.json")), "/a/b.json");
        assert_eq!(quote(Path::new("/a b/it's")), r"'/a b/it'\''s'");
    }
}

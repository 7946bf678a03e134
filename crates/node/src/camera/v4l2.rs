//! Finding cameras: the `videoN` nodes of a device directory (`/dev`) that are V4L2 video
//! capture devices, and who holds a busy one.
//!
//! Each candidate is checked without ever blocking or following a link: `lstat` first (only a
//! character device is opened at all), then `open(O_RDONLY | O_NONBLOCK | O_NOFOLLOW)` and
//! `fstat` on the descriptor (the name cannot be swapped for a FIFO in between), then the
//! `VIDIOC_QUERYCAP` ioctl. A node is a camera when its capabilities (the node's own
//! `device_caps` where the driver reports them) include `V4L2_CAP_VIDEO_CAPTURE`; a webcam's
//! metadata node (`/dev/video1` beside `/dev/video0`) is not. Everything skipped is kept with
//! the reason, so "no camera" can say what was there instead.
//!
//! The ioctl goes through `nix`'s `ioctl_read!` (the only unsafe code of this crate, in
//! [`sys`]): one fixed kernel ABI struct, read into a value we own.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use clawmcp_fs::FileKind;
use nix::errno::Errno;
use nix::fcntl::OFlag;

/// At most this many `videoN` names are looked at: the kernel numbers at most 256 video nodes.
pub const MAX_NODES: usize = 256;
/// At most this many holders of a busy device are named.
pub const MAX_HOLDERS: usize = 8;

/// One video capture device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Camera {
    /// What callers pass as `deviceId`: the stable `v4l/by-id` link when udev made one, else the
    /// node's path.
    pub id: String,
    /// The device node that was checked (`/dev/video0`); what ffmpeg opens.
    pub node: PathBuf,
    /// The driver's card name (`HD Pro Webcam C920`).
    pub name: String,
}

/// A `videoN` entry that is not a camera, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub why: String,
}

/// What one scan of a device directory found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    pub root: PathBuf,
    /// In node order (`video0` before `video2` before `video10`); the first is the default.
    pub cameras: Vec<Camera>,
    pub skipped: Vec<Skipped>,
}

impl Scan {
    /// The camera `device_id` names (its id or its node's path), or the default for `None`.
    pub fn resolve(&self, device_id: Option<&str>) -> Result<&Camera, String> {
        let Some(wanted) = device_id else {
            return self.cameras.first().ok_or_else(|| self.no_camera());
        };
        if let Some(camera) = self.cameras.iter().find(|c| c.id == wanted || c.node.as_os_str() == wanted) {
            return Ok(camera);
        }
        if self.cameras.is_empty() {
            return Err(format!("unknown deviceId `{wanted}`: {}", self.no_camera()));
        }
        let known: Vec<String> = self.cameras.iter().map(|c| format!("`{}` ({})", c.id, c.name)).collect();
        Err(format!(
            "unknown deviceId `{wanted}`: the cameras are {}; call camera.list for their ids, or omit deviceId for the \
             default",
            known.join(", ")
        ))
    }

    /// Why there is no camera, with what the scan saw instead.
    pub fn no_camera(&self) -> String {
        let mut message =
            format!("no camera found: {} has no video capture device (V4L2 /dev/videoN)", self.root.display());
        if !self.skipped.is_empty() {
            let seen: Vec<String> = self.skipped.iter().map(|s| format!("{}: {}", s.path.display(), s.why)).collect();
            message.push_str(&format!(" (seen: {})", seen.join("; ")));
        }
        message.push_str(
            "; plug a camera in (it appears as /dev/videoN), or check that the node's user may open it (the `video` \
             group)",
        );
        message
    }
}

/// The cameras under `root` (`/dev` in production).
pub fn scan(root: &Path) -> Scan {
    let mut numbered: Vec<(u32, PathBuf)> = match fs::read_dir(root) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name();
                let index = name.to_str()?.strip_prefix("video")?;
                let index = index.parse::<u32>().ok().filter(|_| index.bytes().all(|b| b.is_ascii_digit()))?;
                Some((index, entry.path()))
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    numbered.sort();
    numbered.truncate(MAX_NODES);
    let by_id = stable_links(root);
    let mut scan = Scan { root: root.to_owned(), cameras: Vec::new(), skipped: Vec::new() };
    for (_, path) in numbered {
        match probe(&path) {
            Ok(name) => scan.cameras.push(Camera { id: stable_id(&by_id, &path), node: path, name }),
            Err(why) => {
                tracing::debug!(path = %path.display(), %why, "not a camera");
                scan.skipped.push(Skipped { path, why });
            }
        }
    }
    scan
}

/// `root/v4l/by-id/*` links with the device each resolves to, sorted by name. Only resolved
/// (`canonicalize` reads links, it opens nothing), never opened.
fn stable_links(root: &Path) -> Vec<(PathBuf, PathBuf)> {
    let Ok(entries) = fs::read_dir(root.join("v4l").join("by-id")) else { return Vec::new() };
    let mut links: Vec<(PathBuf, PathBuf)> = entries
        .filter_map(Result::ok)
        .take(MAX_NODES)
        .filter_map(|entry| Some((entry.path(), fs::canonicalize(entry.path()).ok()?)))
        .collect();
    links.sort();
    links
}

/// The `by-id` link that resolves to `node`, else `node` itself, as a deviceId.
fn stable_id(by_id: &[(PathBuf, PathBuf)], node: &Path) -> String {
    let canonical = fs::canonicalize(node).unwrap_or_else(|_| node.to_owned());
    by_id
        .iter()
        .find(|(_, target)| *target == canonical)
        .map_or_else(|| node.display().to_string(), |(link, _)| link.display().to_string())
}

/// The card name of the capture device at `path`, or why it is not one.
fn probe(path: &Path) -> Result<String, String> {
    let before = fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if !before.file_type().is_char_device() {
        let kind = FileKind::of(&before).map_or_else(|| "a regular file".to_owned(), |kind| kind.to_string());
        return Err(format!("it is {kind}, not a device"));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NOCTTY).bits())
        .open(path)
        .map_err(|error| open_failure(&error))?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.file_type().is_char_device() {
        return Err("it was replaced by something that is not a device".into());
    }
    let caps = sys::query_caps(file.as_raw_fd()).map_err(|errno| match errno {
        Errno::ENOTTY | Errno::EINVAL => "a character device that is not V4L2".to_owned(),
        other => format!("VIDIOC_QUERYCAP failed: {}", other.desc()),
    })?;
    if !caps.is_video_capture() {
        return Err(format!("V4L2 device `{}` without video capture (a metadata or output node)", caps.card()));
    }
    Ok(caps.card())
}

/// Why a camera cannot be opened most often, and the fix.
pub const PERMISSION_DENIED: &str = "permission denied: the node's user cannot open it (add the user to the `video` \
                                     group: sudo usermod -aG video $USER, then log in again)";

/// An open error in words, with the fix for the usual one.
pub fn open_failure(error: &io::Error) -> String {
    match error.raw_os_error().map(Errno::from_raw) {
        Some(Errno::EACCES | Errno::EPERM) => PERMISSION_DENIED.into(),
        Some(Errno::ENXIO | Errno::ENODEV) => "the device has no driver behind it (unplugged?)".into(),
        Some(Errno::ELOOP) => "a symbolic link (not followed)".into(),
        _ => error.to_string(),
    }
}

/// A process that has `path` open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    /// `/proc/PID/comm`: the program's name.
    pub name: String,
}

/// The processes (as far as this user may look: `/proc/PID/fd` of other users is unreadable)
/// that have `path` open, at most [`MAX_HOLDERS`]. Best effort, for a "device busy" message.
pub fn holders(path: &Path) -> Vec<Holder> {
    holders_in(Path::new("/proc"), path)
}

fn holders_in(proc_root: &Path, path: &Path) -> Vec<Holder> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let Ok(processes) = fs::read_dir(proc_root) else { return Vec::new() };
    let mut found = Vec::new();
    for process in processes.filter_map(Result::ok) {
        let Some(pid) = process.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
        let Ok(fds) = fs::read_dir(process.path().join("fd")) else { continue };
        let holds = fds.filter_map(Result::ok).any(|fd| fs::read_link(fd.path()).is_ok_and(|link| link == target));
        if holds {
            let name = fs::read_to_string(process.path().join("comm")).unwrap_or_default().trim().to_owned();
            found.push(Holder { pid, name });
            if found.len() == MAX_HOLDERS {
                break;
            }
        }
    }
    found.sort_by_key(|holder| holder.pid);
    found
}

/// `VIDIOC_QUERYCAP`, the crate's one ioctl.
#[allow(unsafe_code)]
mod sys {
    use std::os::fd::RawFd;

    use nix::errno::Errno;

    /// `V4L2_CAP_VIDEO_CAPTURE` (linux/videodev2.h).
    const VIDEO_CAPTURE: u32 = 0x0000_0001;
    /// `V4L2_CAP_DEVICE_CAPS`: `device_caps` is filled in (every driver since Linux 3.3).
    const DEVICE_CAPS: u32 = 0x8000_0000;

    /// `struct v4l2_capability`, the kernel's fixed ABI (104 bytes).
    #[repr(C)]
    pub struct Capability {
        driver: [u8; 16],
        card: [u8; 32],
        bus_info: [u8; 32],
        version: u32,
        capabilities: u32,
        device_caps: u32,
        reserved: [u32; 3],
    }

    const _: () = assert!(std::mem::size_of::<Capability>() == 104);

    impl Capability {
        /// The node's own capabilities (a device's `capabilities` are the union of its nodes').
        pub fn is_video_capture(&self) -> bool {
            let caps = match self.capabilities & DEVICE_CAPS {
                0 => self.capabilities,
                _ => self.device_caps,
            };
            caps & VIDEO_CAPTURE != 0
        }

        pub fn card(&self) -> String {
            let text = |bytes: &[u8]| {
                let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                String::from_utf8_lossy(&bytes[..end]).trim().to_owned()
            };
            let (card, driver) = (text(&self.card), text(&self.driver));
            match (card.is_empty(), driver.is_empty()) {
                (false, _) => card,
                (true, false) => driver,
                (true, true) => "Camera".to_owned(),
            }
        }
    }

    nix::ioctl_read!(vidioc_querycap, b'V', 0, Capability);

    pub fn query_caps(fd: RawFd) -> Result<Capability, Errno> {
        let mut caps = Capability {
            driver: [0; 16],
            card: [0; 32],
            bus_info: [0; 32],
            version: 0,
            capabilities: 0,
            device_caps: 0,
            reserved: [0; 3],
        };
        // SAFETY: `fd` is an open descriptor the caller owns for the whole call, and `caps` is a
        // live, writable value of exactly the type (and size, checked above) the ioctl writes.
        unsafe { vidioc_querycap(fd, &mut caps) }?;
        Ok(caps)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::process::{Command, Stdio};

    use super::*;

    #[test]
    fn an_empty_or_missing_directory_has_no_camera() {
        let dir = tempfile::tempdir().unwrap();
        let scan = scan(dir.path());
        assert!(scan.cameras.is_empty() && scan.skipped.is_empty(), "{scan:?}");
        let missing = super::scan(&dir.path().join("absent"));
        assert!(missing.cameras.is_empty());
        let error = scan.resolve(None).unwrap_err();
        assert!(error.starts_with(&format!("no camera found: {} has no video capture device", dir.path().display())));
        assert!(!error.contains("seen:"), "nothing to report: {error}");
    }

    #[test]
    fn a_regular_file_a_fifo_and_a_symlink_named_video0_are_skipped_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("video0"), b"not a camera").unwrap();
        nix::unistd::mkfifo(&dir.path().join("video1"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        // A link to a FIFO: following it would open the FIFO.
        symlink(dir.path().join("video1"), dir.path().join("video2")).unwrap();
        // A link to a character device that is not V4L2 (opening /dev/null is harmless, but
        // links are never followed).
        symlink("/dev/null", dir.path().join("video3")).unwrap();
        fs::create_dir(dir.path().join("video4")).unwrap();
        fs::write(dir.path().join("videox"), b"").unwrap();
        fs::write(dir.path().join("video+5"), b"").unwrap();
        let scan = scan(dir.path());
        assert!(scan.cameras.is_empty());
        let why: Vec<(String, String)> = scan
            .skipped
            .iter()
            .map(|s| (s.path.file_name().unwrap().to_string_lossy().into_owned(), s.why.clone()))
            .collect();
        assert_eq!(
            why,
            [
                ("video0".to_owned(), "it is a regular file, not a device".to_owned()),
                ("video1".to_owned(), "it is a FIFO (named pipe), not a device".to_owned()),
                ("video2".to_owned(), "it is a symbolic link, not a device".to_owned()),
                ("video3".to_owned(), "it is a symbolic link, not a device".to_owned()),
                ("video4".to_owned(), "it is a directory, not a device".to_owned()),
            ],
            "only videoN names are candidates, in node order"
        );
        let error = scan.resolve(None).unwrap_err();
        assert!(error.contains("video1: it is a FIFO (named pipe), not a device"), "{error}");
    }

    #[test]
    fn a_character_device_that_is_not_v4l2_is_reported() {
        // /dev/null is a character device: it is opened, and the ioctl refused (ENOTTY).
        assert_eq!(probe(Path::new("/dev/null")), Err("a character device that is not V4L2".to_owned()));
    }

    #[test]
    fn a_by_id_link_is_the_stable_id_and_links_are_resolved_without_being_opened() {
        let dir = tempfile::tempdir().unwrap();
        let by_id = dir.path().join("v4l").join("by-id");
        fs::create_dir_all(&by_id).unwrap();
        fs::write(dir.path().join("video0"), b"").unwrap();
        nix::unistd::mkfifo(&dir.path().join("video2"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        symlink("../../video0", by_id.join("usb-Cam_1234-video-index0")).unwrap();
        // A link to a FIFO: resolving it never opens it, so nothing waits for a writer.
        symlink("../../video2", by_id.join("usb-Cam_1234-video-index1")).unwrap();
        symlink("../../gone", by_id.join("usb-Gone-video-index0")).unwrap();
        let links = stable_links(dir.path());
        let real = |name: &str| fs::canonicalize(dir.path().join(name)).unwrap();
        assert_eq!(
            links,
            [
                (by_id.join("usb-Cam_1234-video-index0"), real("video0")),
                (by_id.join("usb-Cam_1234-video-index1"), real("video2")),
            ],
            "a dangling link is left out"
        );
        assert_eq!(
            stable_id(&links, &dir.path().join("video0")),
            by_id.join("usb-Cam_1234-video-index0").display().to_string()
        );
        let unlinked = dir.path().join("video4");
        assert_eq!(stable_id(&links, &unlinked), unlinked.display().to_string(), "no link: the node's path");
    }

    #[test]
    fn nodes_are_taken_in_numeric_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["video10", "video2", "video0"] {
            fs::write(dir.path().join(name), b"").unwrap();
        }
        let order: Vec<PathBuf> = scan(dir.path()).skipped.into_iter().map(|s| s.path).collect();
        assert_eq!(order, ["video0", "video2", "video10"].map(|name| dir.path().join(name)));
    }

    #[test]
    fn this_machines_dev_has_exactly_the_capture_nodes_the_kernel_knows() {
        // The kernel lists every V4L2 node in /sys/class/video4linux; this machine has none (no
        // V4L2 core), so /dev lists no camera. On a machine with cameras, each found is one.
        let known: Vec<String> = fs::read_dir("/sys/class/video4linux")
            .map(|entries| {
                entries.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect()
            })
            .unwrap_or_default();
        let scan = scan(Path::new("/dev"));
        for camera in &scan.cameras {
            let name = camera.node.file_name().unwrap().to_string_lossy().into_owned();
            assert!(known.contains(&name), "{} is not a V4L2 node the kernel knows: {known:?}", camera.node.display());
        }
        if known.is_empty() {
            assert_eq!(scan.cameras, Vec::<Camera>::new(), "no V4L2 here, so no camera");
        }
    }

    #[test]
    fn an_unknown_device_id_lists_the_cameras() {
        let camera = |n: u32, name: &str| Camera {
            id: format!("/dev/v4l/by-id/usb-{name}-video-index0"),
            node: PathBuf::from(format!("/dev/video{n}")),
            name: name.to_owned(),
        };
        let scan = Scan { root: "/dev".into(), cameras: vec![camera(0, "Front"), camera(2, "Back")], skipped: vec![] };
        assert_eq!(scan.resolve(None).unwrap().name, "Front", "the first is the default");
        assert_eq!(scan.resolve(Some("/dev/video2")).unwrap().name, "Back", "the node's path works too");
        assert_eq!(scan.resolve(Some("/dev/v4l/by-id/usb-Back-video-index0")).unwrap().name, "Back");
        assert_eq!(
            scan.resolve(Some("/dev/video9")).unwrap_err(),
            "unknown deviceId `/dev/video9`: the cameras are `/dev/v4l/by-id/usb-Front-video-index0` (Front), \
             `/dev/v4l/by-id/usb-Back-video-index0` (Back); call camera.list for their ids, or omit deviceId for the \
             default"
        );
        let none = Scan { root: "/dev".into(), cameras: vec![], skipped: vec![] };
        assert!(none.resolve(Some("x")).unwrap_err().starts_with("unknown deviceId `x`: no camera found: /dev has"));
    }

    #[test]
    fn the_holder_of_a_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("held");
        fs::write(&path, b"").unwrap();
        let mut child = Command::new("sleep")
            .arg("30")
            .stdin(fs::File::open(&path).unwrap())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let found = holders(&path);
        let _ = child.kill();
        let _ = child.wait();
        // Another test's child, forked but not yet exec'd, may hold a copy for an instant.
        assert!(found.contains(&Holder { pid: child.id(), name: "sleep".into() }), "{found:?}");
        assert_eq!(holders(&dir.path().join("nobody-holds-this")), []);
    }

    #[test]
    fn open_failures_say_what_to_do() {
        let denied = open_failure(&io::Error::from_raw_os_error(Errno::EACCES as i32));
        assert!(denied.starts_with("permission denied") && denied.contains("video` group"), "{denied}");
        assert_eq!(open_failure(&io::Error::from_raw_os_error(Errno::ELOOP as i32)), "a symbolic link (not followed)");
    }
}

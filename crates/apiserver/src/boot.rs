//! The start-up steps every Flotilla API server shares (the host, the aggregated API server,
//! a simulated member): its data directory, its listener, serving on it, and one error for
//! what can fail on the way. Each server's own start-up adds its steps and wraps
//! [`BootError`] in its error.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;

use crate::serve::{PeerTrust, ServerHandle};

/// A start-up step every server takes failed.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    #[error("creating the data directory {path}")]
    CreateDataDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("preparing certificates")]
    Pki(#[from] flotilla_pki::PkiError),
    #[error("opening storage")]
    Storage(#[from] flotilla_storage::StorageError),
    #[error("listening on {addr}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// For a server's error enum with a `Boot(BootError)` variant: `?` on the certificate and
/// storage errors a start-up meets goes through [`BootError`], so each server's error
/// names those failures once, in one place.
#[macro_export]
macro_rules! boot_error_conversions {
    ($error:ty) => {
        impl From<$crate::boot::macro_paths::PkiError> for $error {
            fn from(e: $crate::boot::macro_paths::PkiError) -> Self {
                Self::Boot($crate::BootError::from(e))
            }
        }
        impl From<$crate::boot::macro_paths::StorageError> for $error {
            fn from(e: $crate::boot::macro_paths::StorageError) -> Self {
                Self::Boot($crate::BootError::from(e))
            }
        }
    };
}

/// The paths [`boot_error_conversions!`] names, so a crate using it needs no dependency of
/// its own on them.
#[doc(hidden)]
pub mod macro_paths {
    pub use flotilla_pki::PkiError;
    pub use flotilla_storage::StorageError;
}

/// Creates the data directory (and its parents) when missing.
pub fn create_data_dir(path: &Path) -> Result<(), BootError> {
    std::fs::create_dir_all(path).map_err(|source| BootError::CreateDataDir {
        path: path.to_path_buf(),
        source,
    })
}

/// Binds `addr`; returns the listener and the address it got (the port chosen when `addr`
/// asks for port 0).
pub async fn listen(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), BootError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| BootError::Listen { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| BootError::Listen { addr, source })?;
    Ok((listener, bound))
}

/// Serves `router` over TLS on `listener` (bound to `addr`) in the background.
pub fn serve(
    listener: TcpListener,
    addr: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    trust: Arc<PeerTrust>,
) -> Result<ServerHandle, BootError> {
    ServerHandle::spawn(listener, tls, router, trust)
        .map_err(|source| BootError::Listen { addr, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_taken_port_names_the_address() {
        let (_held, addr) = listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let err = listen(addr).await.unwrap_err();
        assert!(matches!(err, BootError::Listen { addr: a, .. } if a == addr));
        assert_eq!(err.to_string(), format!("listening on {addr}"));
    }

    #[test]
    fn a_data_dir_under_a_file_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let err = create_data_dir(&file.join("data")).unwrap_err();
        assert!(err.to_string().contains("creating the data directory"));
        assert!(err.to_string().ends_with("file/data"), "{err}");
    }
}

//! The TLS session store of one member's connector: the last session with the member, for
//! the next connection to resume. A connector talks to one server, and each of its
//! connections needs one ticket; rustls's in-memory cache reserves room for several servers
//! and eight tickets each up front (about 2 KB per member, with thousands of members kept).

use std::fmt;

use parking_lot::Mutex;
use rustls::NamedGroup;
use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;

/// What is remembered of the last server talked to.
struct Remembered {
    server: ServerName<'static>,
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    tls13: Option<Tls13ClientSessionValue>,
}

/// Sessions with one server: the newest TLS 1.3 ticket (a server sends one or more per
/// handshake; any one resumes), or the TLS 1.2 session, and the key-exchange group it chose.
/// Asked about another server, it answers nothing, and remembering one forgets the last.
#[derive(Default)]
pub struct LastSession {
    remembered: Mutex<Option<Remembered>>,
}

impl fmt::Debug for LastSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secrets: which server, and what is kept for it.
        let remembered = self.remembered.lock();
        f.debug_struct("LastSession")
            .field("server", &remembered.as_ref().map(|r| &r.server))
            .field(
                "tls13_ticket",
                &remembered.as_ref().is_some_and(|r| r.tls13.is_some()),
            )
            .field(
                "tls12_session",
                &remembered.as_ref().is_some_and(|r| r.tls12.is_some()),
            )
            .finish()
    }
}

impl LastSession {
    /// Runs `f` on what is remembered of `server`, starting afresh for a new server.
    fn edit(&self, server: ServerName<'static>, f: impl FnOnce(&mut Remembered)) {
        let mut remembered = self.remembered.lock();
        let entry = match &mut *remembered {
            Some(r) if r.server == server => r,
            slot => slot.insert(Remembered {
                server,
                kx_hint: None,
                tls12: None,
                tls13: None,
            }),
        };
        f(entry);
    }

    /// Reads what is remembered of `server`, if it is the server remembered.
    fn read<T>(&self, server: &ServerName<'_>, f: impl FnOnce(&mut Remembered) -> T) -> Option<T> {
        let mut remembered = self.remembered.lock();
        remembered.as_mut().filter(|r| r.server == *server).map(f)
    }
}

impl ClientSessionStore for LastSession {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.edit(server_name, |r| r.kx_hint = Some(group));
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.read(server_name, |r| r.kx_hint).flatten()
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.edit(server_name, |r| r.tls12 = Some(value));
    }

    fn tls12_session(&self, server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.read(server_name, |r| r.tls12.clone()).flatten()
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.read(server_name, |r| r.tls12 = None);
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        self.edit(server_name, |r| r.tls13 = Some(value));
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        // A ticket is used once (RFC 8446 recommends it): the connection it resumes gets its own.
        self.read(server_name, |r| r.tls13.take()).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(host: &str) -> ServerName<'static> {
        ServerName::try_from(host.to_string()).unwrap()
    }

    #[test]
    fn only_the_last_server_is_remembered() {
        let store = LastSession::default();
        assert_eq!(store.kx_hint(&name("a.example")), None);
        store.set_kx_hint(name("a.example"), NamedGroup::X25519);
        assert_eq!(store.kx_hint(&name("a.example")), Some(NamedGroup::X25519));
        assert_eq!(store.kx_hint(&name("b.example")), None);
        store.set_kx_hint(name("b.example"), NamedGroup::secp256r1);
        assert_eq!(
            store.kx_hint(&name("b.example")),
            Some(NamedGroup::secp256r1)
        );
        assert_eq!(store.kx_hint(&name("a.example")), None);
        assert!(store.take_tls13_ticket(&name("b.example")).is_none());
        assert!(store.tls12_session(&name("b.example")).is_none());
        assert!(format!("{store:?}").contains("b.example"));
    }
}

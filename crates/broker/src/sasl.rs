//! SASL/PLAIN on the listener (`serve --kafka-sasl-plain-users FILE`): the lab as a
//! `SASL_PLAINTEXT` listener, so a client's credentials — and a wrong password — meet what
//! they would meet on a secured cluster.
//!
//! The exchange, as Kafka's `SaslServerAuthenticator` runs it on a connection:
//!
//! 1. ApiVersions may come first (a client learns which SASL versions the broker speaks).
//! 2. SaslHandshake names a mechanism: PLAIN is taken; any other is
//!    UNSUPPORTED_SASL_MECHANISM with the list of enabled ones, and the connection is closed.
//! 3. After a v1 handshake, SaslAuthenticate carries the PLAIN token, `[authzid] NUL username
//!    NUL password` (RFC 4616). Right: the connection is authenticated, for good (no
//!    re-authentication: a session lifetime of 0). Wrong: SASL_AUTHENTICATION_FAILED with the
//!    reason, and closed. After a v0 handshake (clients from before KIP-152) the token comes as
//!    a bare size-prefixed frame instead; Kafka answers an empty bare frame, or closes the
//!    connection without a word, since such a client could not read an error.
//! 4. Any other request before that closes the connection, as Kafka does.
//!
//! Without SASL (the default) the listener is `PLAINTEXT`. Kafka lists both SASL APIs in
//! ApiVersions on every listener, whatever it asks for, and answers them ILLEGAL_SASL_STATE
//! where there is nothing to authenticate (a `PLAINTEXT` listener, or a connection already
//! authenticated); so does the lab. Both versions of SaslHandshake are listed, as Kafka lists
//! them: librdkafka before 2.x looks for v0 to know that a broker takes handshakes at all.
//!
//! Authenticated users may do anything: the lab has no authorizer (DescribeAcls says
//! SECURITY_DISABLED), as a cluster without `authorizer.class.name`.

use offsetlab_wire::error::{
    ILLEGAL_SASL_STATE, NONE, SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM,
};
use offsetlab_wire::kafka_protocol::messages::{ApiKey, SaslAuthenticateResponse, SaslHandshakeResponse};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use std::collections::BTreeMap;
use std::fmt;

/// The one mechanism served.
pub const PLAIN: &str = "PLAIN";

/// RFC 4616: an implementation must take user names and passwords of up to 255 bytes; the lab
/// takes up to this many, and a users file with more is refused, so that nothing it accepts is
/// cut.
pub const MAX_CREDENTIAL_BYTES: usize = 1024;

/// Kafka's `sasl.server.max.receive.size`: the largest frame a connection may send before it
/// has authenticated (a larger one closes it unread).
pub const MAX_UNAUTHENTICATED_FRAME: usize = 512 << 10;

/// The users a SASL/PLAIN listener accepts, with their passwords: Kafka's JAAS
/// `user_NAME="PASSWORD"` entries of `PlainLoginModule`, read from a file of `NAME=PASSWORD`
/// lines.
#[derive(Clone, PartialEq, Eq)]
pub struct PlainUsers(BTreeMap<String, String>);

impl fmt::Debug for PlainUsers {
    /// The names, never the passwords.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PlainUsers")
            .field(&self.0.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A users file that cannot be taken: its line (from 1) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsersFileError {
    /// 0 when the file as a whole is wrong (no user in it).
    pub line: usize,
    pub why: String,
}

impl fmt::Display for UsersFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.why)
        } else {
            write!(f, "{}: {}", self.line, self.why)
        }
    }
}

impl std::error::Error for UsersFileError {}

impl PlainUsers {
    /// One user per line, `NAME=PASSWORD`: the name up to the first `=`, the password the rest
    /// of the line as it is (spaces, `=` and `#` included; only the line break is not part of
    /// it). Blank lines and lines starting with `#` are skipped. A name or password that is
    /// empty, holds a NUL or is longer than [`MAX_CREDENTIAL_BYTES`], and a name given twice,
    /// are refused with their line number.
    pub fn parse(text: &str) -> Result<Self, UsersFileError> {
        let mut users = BTreeMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let fail = |why: &str| UsersFileError {
                line,
                why: why.to_string(),
            };
            if raw.trim().is_empty() || raw.trim_start().starts_with('#') {
                continue;
            }
            let (name, password) = raw
                .split_once('=')
                .ok_or_else(|| fail("expected NAME=PASSWORD"))?;
            for (what, value) in [("user name", name), ("password", password)] {
                if value.is_empty() {
                    return Err(fail(&format!("an empty {what}")));
                }
                if value.contains('\0') {
                    return Err(fail(&format!(
                        "a NUL in the {what} (SASL/PLAIN separates fields with NUL)"
                    )));
                }
                if value.len() > MAX_CREDENTIAL_BYTES {
                    return Err(fail(&format!(
                        "a {what} longer than {MAX_CREDENTIAL_BYTES} bytes"
                    )));
                }
            }
            if users.insert(name.to_string(), password.to_string()).is_some() {
                return Err(fail(&format!("user '{}' is given twice", name.escape_debug())));
            }
        }
        if users.is_empty() {
            return Err(UsersFileError {
                line: 0,
                why: "no user in it (one NAME=PASSWORD per line)".into(),
            });
        }
        Ok(Self(users))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `password` is `user`'s. The comparison looks at every byte of a password of
    /// the right length, so its time does not say how much of a guess was right.
    fn verify(&self, user: &str, password: &str) -> bool {
        self.0
            .get(user)
            .is_some_and(|known| constant_time_eq(known.as_bytes(), password.as_bytes()))
    }
}

/// `a == b`, looking at every byte whatever the first difference (the length is not secret).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// Where one connection stands in SASL authentication.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum SaslState {
    /// Nothing but ApiVersions and SaslHandshake yet.
    #[default]
    Start,
    /// PLAIN was agreed: the token is awaited, in a SaslAuthenticate request (`framed`, after
    /// a v1 handshake) or as a bare frame (after v0).
    Handshaken { framed: bool },
    /// As this user, for the rest of the connection.
    Authenticated(String),
}

/// What a SASL request gets: the response, and whether the connection closes after it.
#[derive(Debug)]
pub(crate) struct Answer<T> {
    pub(crate) response: T,
    pub(crate) close: bool,
    /// What the server's log says of it (a failed authentication), if anything.
    pub(crate) log: Option<AuthFailure>,
}

/// A failed authentication as the server's log tells it: who, from where, as whom, and why.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct AuthFailure {
    /// Empty for a bare token (after a v0 handshake), which carries no client id.
    pub(crate) client_id: String,
    pub(crate) host: String,
    pub(crate) user: Option<String>,
    pub(crate) message: String,
}

impl AuthFailure {
    /// One warning on the server's log; the password is never in it. The names are the
    /// client's own strings, quoted and escaped (`?`) so that none can forge a line.
    pub(crate) fn log(&self) {
        tracing::warn!(
            client = ?self.client_id,
            host = %self.host,
            user = self.user.as_deref(),
            "failed SASL/PLAIN authentication: {}",
            self.message
        );
    }
}

/// Whether a request of `api_key` may be served on a connection in `state`: everything on a
/// listener without SASL or once authenticated; before that, only what authentication needs.
pub(crate) fn admits(users: Option<&PlainUsers>, state: &SaslState, api_key: ApiKey) -> bool {
    users.is_none()
        || matches!(state, SaslState::Authenticated(_))
        || matches!(
            api_key,
            ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate
        )
}

/// Whether the connection's next frame is a bare token (after a v0 handshake), not a request.
pub(crate) fn awaits_bare_token(state: &SaslState) -> bool {
    *state == SaslState::Handshaken { framed: false }
}

/// SaslHandshake (of `version`) naming `mechanism`.
pub(crate) fn handshake(
    users: Option<&PlainUsers>,
    state: &mut SaslState,
    mechanism: &str,
    version: i16,
) -> Answer<SaslHandshakeResponse> {
    let enabled = || vec![StrBytes::from_static_str(PLAIN)];
    let answer = |error: i16, mechanisms: Vec<StrBytes>, close: bool| Answer {
        response: SaslHandshakeResponse::default()
            .with_error_code(error)
            .with_mechanisms(mechanisms),
        close,
        log: None,
    };
    match (users, &*state) {
        // Nothing to authenticate: a PLAINTEXT listener, or done already.
        (None, _) | (Some(_), SaslState::Authenticated(_)) => answer(ILLEGAL_SASL_STATE, Vec::new(), false),
        // A second handshake in the middle of one: Kafka's authenticator fails the connection.
        (Some(_), SaslState::Handshaken { .. }) => answer(ILLEGAL_SASL_STATE, enabled(), true),
        (Some(_), SaslState::Start) if mechanism == PLAIN => {
            *state = SaslState::Handshaken { framed: version >= 1 };
            answer(NONE, enabled(), false)
        }
        (Some(_), SaslState::Start) => answer(UNSUPPORTED_SASL_MECHANISM, enabled(), true),
    }
}

/// SaslAuthenticate carrying `token`, from a client at `host` named `client_id` (for the log).
pub(crate) fn authenticate(
    users: Option<&PlainUsers>,
    state: &mut SaslState,
    token: &[u8],
    client: (&str, &str),
) -> Answer<SaslAuthenticateResponse> {
    let answer = |error: i16, message: Option<&str>, close: bool, log: Option<AuthFailure>| Answer {
        response: SaslAuthenticateResponse::default()
            .with_error_code(error)
            .with_error_message(message.map(|m| StrBytes::from_string(m.to_string())))
            .with_session_lifetime_ms(0),
        close,
        log,
    };
    let Some(users) = users else {
        return answer(
            ILLEGAL_SASL_STATE,
            Some("SaslAuthenticate on a listener without SASL"),
            false,
            None,
        );
    };
    match state {
        SaslState::Authenticated(_) => {
            return answer(
                ILLEGAL_SASL_STATE,
                Some("SaslAuthenticate after the connection authenticated"),
                false,
                None,
            )
        }
        SaslState::Start => {
            return answer(
                ILLEGAL_SASL_STATE,
                Some("SaslAuthenticate before a SaslHandshake"),
                true,
                None,
            )
        }
        SaslState::Handshaken { framed: false } => {
            return answer(
                ILLEGAL_SASL_STATE,
                Some("SaslAuthenticate after a v0 SaslHandshake, whose token comes unframed"),
                true,
                None,
            )
        }
        SaslState::Handshaken { framed: true } => {}
    }
    match conclude(users, state, token, client) {
        Ok(()) => answer(NONE, None, false, None),
        Err(failure) => {
            let message = failure.message.clone();
            answer(SASL_AUTHENTICATION_FAILED, Some(&message), true, Some(failure))
        }
    }
}

/// A bare token after a v0 handshake: `Some(empty answer)` once authenticated, `None` to close
/// the connection (a failed authentication; the log line says why).
pub(crate) fn authenticate_bare(
    users: Option<&PlainUsers>,
    state: &mut SaslState,
    token: &[u8],
    client: (&str, &str),
    log: &crate::auth_failures::AuthFailureLog,
) -> Option<Vec<u8>> {
    let users = users.filter(|_| awaits_bare_token(state))?;
    match conclude(users, state, token, client) {
        // A bare answer: the server's token (PLAIN has none) behind its 4-byte size.
        Ok(()) => Some(0u32.to_be_bytes().to_vec()),
        Err(failure) => {
            log.record(&failure);
            None
        }
    }
}

/// Checks a PLAIN token: the connection authenticated (`state`), or the failure (its message is
/// what the client is told).
fn conclude(
    users: &PlainUsers,
    state: &mut SaslState,
    token: &[u8],
    (client_id, host): (&str, &str),
) -> Result<(), AuthFailure> {
    match check_plain(users, token) {
        Ok(user) => {
            *state = SaslState::Authenticated(user);
            Ok(())
        }
        Err(failure) => Err(AuthFailure {
            client_id: client_id.to_string(),
            host: host.to_string(),
            user: failure.user,
            message: failure.message,
        }),
    }
}

/// Why a PLAIN token was refused: what the client is told, and the user it named, if any.
#[derive(Debug, PartialEq, Eq)]
struct Failure {
    message: String,
    user: Option<String>,
}

/// RFC 4616's message, `[authzid] NUL authcid NUL passwd`: the user it authenticates.
fn check_plain(users: &PlainUsers, token: &[u8]) -> Result<String, Failure> {
    let fail = |message: &str, user: Option<&str>| Failure {
        message: message.to_string(),
        user: user.map(str::to_string),
    };
    let Ok(text) = std::str::from_utf8(token) else {
        return Err(fail("Invalid SASL/PLAIN response: not UTF-8", None));
    };
    let fields: Vec<&str> = text.split('\0').collect();
    let [authzid, user, password] = fields.as_slice() else {
        return Err(fail(
            &format!(
                "Invalid SASL/PLAIN response: expected 3 fields separated by NUL, got {}",
                fields.len()
            ),
            None,
        ));
    };
    if user.is_empty() {
        return Err(fail("Authentication failed: username not specified", None));
    }
    if password.is_empty() {
        return Err(fail("Authentication failed: password not specified", Some(user)));
    }
    if !users.verify(user, password) {
        return Err(fail(
            "Authentication failed: Invalid username or password",
            Some(user),
        ));
    }
    if !authzid.is_empty() && authzid != user {
        return Err(fail(
            "Authentication failed: Client requested an authorization id that is different from username",
            Some(user),
        ));
    }
    Ok((*user).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn users() -> PlainUsers {
        PlainUsers::parse("# the lab's users\nada=s3cret\n\nbob=pass = word # not a comment\n")
            .expect("users")
    }

    #[test]
    fn a_users_file_is_name_equals_the_rest_of_the_line() {
        let u = users();
        assert_eq!(u.len(), 2);
        assert!(u.verify("ada", "s3cret"));
        assert!(u.verify("bob", "pass = word # not a comment"));
        assert!(!u.verify("ada", "s3cre"));
        assert!(!u.verify("eve", "s3cret"));
        assert_eq!(format!("{u:?}"), r#"PlainUsers(["ada", "bob"])"#, "no passwords");
    }

    #[test]
    fn a_bad_users_file_names_its_line() {
        let err = |text: &str| PlainUsers::parse(text).expect_err(text).to_string();
        assert_eq!(err("ada=x\nno equals sign\n"), "2: expected NAME=PASSWORD");
        assert_eq!(err("=x"), "1: an empty user name");
        assert_eq!(err("ada="), "1: an empty password");
        assert_eq!(err("ada=x\nada=y"), "2: user 'ada' is given twice");
        assert!(err("ada=a\0b").starts_with("1: a NUL in the password"));
        assert!(
            err(&format!("ada={}", "x".repeat(MAX_CREDENTIAL_BYTES + 1))).starts_with("1: a password longer")
        );
        assert_eq!(err("# nobody\n\n"), "no user in it (one NAME=PASSWORD per line)");
    }

    fn token(authzid: &str, user: &str, password: &str) -> Vec<u8> {
        format!("{authzid}\0{user}\0{password}").into_bytes()
    }

    #[test]
    fn the_exchange_authenticates_once_and_for_good() {
        let u = users();
        let mut state = SaslState::default();
        assert!(admits(Some(&u), &state, ApiKey::ApiVersions));
        assert!(!admits(Some(&u), &state, ApiKey::Metadata));
        let h = handshake(Some(&u), &mut state, PLAIN, 1);
        assert_eq!((h.response.error_code, h.close), (NONE, false));
        assert_eq!(h.response.mechanisms, [StrBytes::from_static_str(PLAIN)]);
        let a = authenticate(
            Some(&u),
            &mut state,
            &token("", "ada", "s3cret"),
            ("c", "/127.0.0.1"),
        );
        assert_eq!((a.response.error_code, a.close), (NONE, false));
        assert_eq!(state, SaslState::Authenticated("ada".into()));
        assert!(admits(Some(&u), &state, ApiKey::Metadata));
        // Once is enough: a second exchange is Kafka's ILLEGAL_SASL_STATE, the connection kept.
        let again = handshake(Some(&u), &mut state, PLAIN, 1);
        assert_eq!(
            (again.response.error_code, again.close),
            (ILLEGAL_SASL_STATE, false)
        );
        let again = authenticate(Some(&u), &mut state, &token("", "ada", "s3cret"), ("c", "/h"));
        assert_eq!(
            (again.response.error_code, again.close),
            (ILLEGAL_SASL_STATE, false)
        );
    }

    #[test]
    fn a_wrong_password_is_refused_with_kafkas_reason_and_closes() {
        let u = users();
        let mut state = SaslState::Handshaken { framed: true };
        let a = authenticate(
            Some(&u),
            &mut state,
            &token("", "ada", "guess"),
            ("billing", "/10.0.0.7"),
        );
        assert_eq!(
            (a.response.error_code, a.close),
            (SASL_AUTHENTICATION_FAILED, true)
        );
        assert_eq!(
            a.response.error_message.as_deref(),
            Some("Authentication failed: Invalid username or password")
        );
        assert_eq!(
            a.log,
            Some(AuthFailure {
                client_id: "billing".into(),
                host: "/10.0.0.7".into(),
                user: Some("ada".into()),
                message: "Authentication failed: Invalid username or password".into(),
            })
        );
        assert_eq!(state, SaslState::Handshaken { framed: true }, "not authenticated");
    }

    #[test]
    fn malformed_tokens_and_foreign_identities_are_refused() {
        let u = users();
        let refused = |t: &[u8]| check_plain(&u, t).expect_err("refused").message;
        assert!(refused(b"ada\0s3cret").contains("expected 3 fields"));
        assert!(refused(b"\0ada\0s3cret\0more").contains("got 4"));
        assert!(refused(&[0, 0xff, 0, b'x']).contains("not UTF-8"));
        assert!(refused(&token("", "", "s3cret")).contains("username not specified"));
        assert!(refused(&token("", "ada", "")).contains("password not specified"));
        assert!(refused(&token("bob", "ada", "s3cret")).contains("authorization id"));
        assert_eq!(check_plain(&u, &token("ada", "ada", "s3cret")), Ok("ada".into()));
    }

    #[test]
    fn other_mechanisms_and_out_of_order_requests_close_the_connection() {
        let u = users();
        let mut state = SaslState::default();
        let h = handshake(Some(&u), &mut state, "SCRAM-SHA-256", 1);
        assert_eq!(
            (h.response.error_code, h.close),
            (UNSUPPORTED_SASL_MECHANISM, true)
        );
        assert_eq!(h.response.mechanisms, [StrBytes::from_static_str(PLAIN)]);
        let mut state = SaslState::default();
        let a = authenticate(Some(&u), &mut state, &token("", "ada", "s3cret"), ("c", "/h"));
        assert_eq!((a.response.error_code, a.close), (ILLEGAL_SASL_STATE, true));
        let mut state = SaslState::Handshaken { framed: true };
        let h = handshake(Some(&u), &mut state, PLAIN, 1);
        assert_eq!((h.response.error_code, h.close), (ILLEGAL_SASL_STATE, true));
    }

    #[test]
    fn without_sasl_both_apis_are_illegal_state_and_everything_is_admitted() {
        let mut state = SaslState::default();
        assert!(admits(None, &state, ApiKey::Produce));
        let h = handshake(None, &mut state, PLAIN, 1);
        assert_eq!((h.response.error_code, h.close), (ILLEGAL_SASL_STATE, false));
        let a = authenticate(None, &mut state, &token("", "ada", "s3cret"), ("c", "/h"));
        assert_eq!((a.response.error_code, a.close), (ILLEGAL_SASL_STATE, false));
        assert_eq!(state, SaslState::Start);
    }

    #[test]
    fn after_a_v0_handshake_the_token_comes_bare() {
        let u = users();
        let mut state = SaslState::default();
        let h = handshake(Some(&u), &mut state, PLAIN, 0);
        assert_eq!(h.response.error_code, NONE);
        assert!(awaits_bare_token(&state));
        assert!(!admits(Some(&u), &state, ApiKey::Metadata));
        let ok = authenticate_bare(
            Some(&u),
            &mut state,
            &token("", "ada", "s3cret"),
            ("c", "/h"),
            &Default::default(),
        );
        assert_eq!(ok, Some(vec![0, 0, 0, 0]), "an empty token behind its size");
        assert_eq!(state, SaslState::Authenticated("ada".into()));
        let mut state = SaslState::Handshaken { framed: false };
        assert_eq!(
            authenticate_bare(
                Some(&u),
                &mut state,
                &token("", "ada", "nope"),
                ("c", "/h"),
                &Default::default()
            ),
            None,
            "closed without a word"
        );
        // A SaslAuthenticate where the bare token belongs is out of order.
        let mut state = SaslState::Handshaken { framed: false };
        let a = authenticate(Some(&u), &mut state, &token("", "ada", "s3cret"), ("c", "/h"));
        assert_eq!((a.response.error_code, a.close), (ILLEGAL_SASL_STATE, true));
    }

    proptest! {
        /// Any name and password a users file can hold (no NUL, no line break, no `=` in the
        /// name; any other character, `#` and spaces included) reads back as written and
        /// authenticates with exactly that password.
        #[test]
        fn every_user_written_reads_back_and_authenticates(
            name in "[^=\0\r\n#]([^=\0\r\n]{0,40})",
            password in "[^\0\r\n]{1,60}",
        ) {
            prop_assume!(!name.trim().is_empty() && !name.trim_start().starts_with('#'));
            let u = PlainUsers::parse(&format!("{name}={password}\n")).expect("parsed");
            prop_assert!(u.verify(&name, &password));
            let mut state = SaslState::Handshaken { framed: true };
            let a = authenticate(Some(&u), &mut state, &token("", &name, &password), ("c", "/h"));
            prop_assert_eq!(a.response.error_code, NONE);
            prop_assert_eq!(state, SaslState::Authenticated(name.clone()));
        }
    }
}

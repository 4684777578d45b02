//! Authentication: who is calling, as an [`Owner`] (tenant, principal); and tenancy:
//! which owner a caller acts as (`tenancy.rs`, the owner model).
//!
//! [`Authenticator`] is built once from the `auth:` block ([`AuthConfig`]) and the
//! environment (`A2AD_HTTP_TOKEN`, `A2AD_API_KEY`), and checks the credentials of one
//! request ([`RequestCredentials`], filled from HTTP headers or gRPC metadata):
//!
//! * `Authorization: Bearer <t>`: a static bearer token, else an HS256 JWT;
//! * `Authorization: Basic <b64 user:pass>`: a PBKDF2-SHA256 password hash;
//! * `X-Api-Key`: an API key; with `X-Platform-User-Id`, an integrator key acting for that
//!   platform user (who becomes the principal).
//!
//! A configured `Authorization` scheme alone decides; `X-Api-Key` is used without one or
//! beside a scheme this node does not serve. Secrets are held only as SHA-256
//! digests (JWT secrets excepted) and compared in constant time: the presented digest is
//! checked with `ring::hmac::verify` against an HMAC (under a per-process random key) of
//! each stored digest. No error carries any part of a credential.

mod basic_cache;
mod config;
mod jwt;
mod operator_config;
pub mod operators;
mod password;
mod tenancy;
mod throttle;

pub use config::{
    ApiKeyConfig, AuthConfig, AuthConfigError, BasicUserConfig, BearerTokenConfig, HashedSecret, IntegratorKeyConfig,
    JwtConfig, JwtSecretConfig, Redacted, ThrottleConfig, ENV_API_KEY, ENV_HTTP_TOKEN, ENV_PRINCIPAL, ENV_TENANT,
};
pub use jwt::JwtError;
pub use password::{hash_password, DEFAULT_PBKDF2_ITERATIONS, MIN_PBKDF2_ITERATIONS, PBKDF2_PREFIX};
pub use tenancy::{TenancyConfig, Visibility};
pub use throttle::ClientAddr;

use a2ad_protocol::{
    A2aError, ApiKeySecurityScheme, ErrorCode, HttpAuthSecurityScheme, SecurityRequirement, SecurityScheme, StringList,
};
use a2ad_storage::Owner;
use base64::Engine;
pub(crate) use config::sha256;
use jwt::JwtVerifier;
use password::{PasswordHash, STANDARD_ANY_PAD};
use ring::hmac;
use ring::rand::SystemRandom;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use throttle::{Check, PasswordAttempt, Throttle};

/// The card's name for bearer tokens and JWTs.
pub const BEARER_AUTH: &str = "bearerAuth";
/// The card's name for HTTP Basic.
pub const BASIC_AUTH: &str = "basicAuth";
/// The card's name for `X-Api-Key`.
pub const API_KEY_AUTH: &str = "apiKeyAuth";
/// The header of API and integrator keys.
pub const API_KEY_HEADER: &str = "X-Api-Key";
/// The header that names the platform user an integrator key acts for.
pub const PLATFORM_USER_HEADER: &str = "X-Platform-User-Id";
/// The realm of every challenge.
pub const REALM: &str = "a2ad";

/// The longest credential header value looked at.
const MAX_CREDENTIAL_LEN: usize = jwt::MAX_TOKEN_LEN;
/// The longest principal accepted (config, JWT subject).
const MAX_PRINCIPAL_LEN: usize = 256;
/// The longest tenant or platform user id.
const MAX_ID_LEN: usize = 128;

/// The credentials of one request, binding-agnostic: HTTP headers or gRPC metadata fill it.
/// `Debug` shows only which are present.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RequestCredentials {
    /// `Authorization`.
    pub authorization: Option<String>,
    /// `X-Api-Key`.
    pub api_key: Option<String>,
    /// `X-Platform-User-Id`.
    pub platform_user_id: Option<String>,
}

impl fmt::Debug for RequestCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = self.authorization.as_deref().map(|a| match a.trim_start().split_once(' ') {
            Some((scheme, _)) if scheme.len() <= 16 => scheme.to_owned(),
            _ => "<redacted>".to_owned(),
        });
        f.debug_struct("RequestCredentials")
            .field("authorization_scheme", &scheme)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("platform_user_id", &self.platform_user_id)
            .finish()
    }
}

/// Why a request was not authenticated. The messages never include a credential; callers
/// answer every variant with 401 `{"error":"Unauthorized"}`, except the two that
/// [`AuthError::rate_limited`] turns into RATE_LIMITED (429 and `Retry-After`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("no credentials")]
    Missing,
    #[error("unsupported Authorization scheme")]
    UnsupportedScheme,
    #[error("malformed credentials")]
    Malformed,
    #[error("invalid credentials")]
    Invalid,
    #[error("an integrator key needs X-Platform-User-Id")]
    PlatformUserRequired,
    #[error("X-Platform-User-Id must be 1-128 characters of A-Z a-z 0-9 _ . : - @")]
    InvalidPlatformUserId,
    #[error("JWT refused: {0}")]
    Jwt(#[from] JwtError),
    #[error("too many failed authentications (retry after {retry_after_seconds} s)")]
    TooManyFailures { retry_after_seconds: u64 },
    #[error("every password check is busy")]
    PasswordChecksBusy,
}

impl AuthError {
    /// The RATE_LIMITED error (with `retryAfterSeconds`) a throttled attempt is answered
    /// with on every binding; `None` for the refusals that are 401.
    pub fn rate_limited(&self) -> Option<A2aError> {
        let (message, wait) = match self {
            AuthError::TooManyFailures { retry_after_seconds } => {
                ("Too many failed authentications: retry later", *retry_after_seconds)
            }
            AuthError::PasswordChecksBusy => ("Too many password checks at once: retry later", 1),
            _ => return None,
        };
        Some(A2aError::new(ErrorCode::RateLimited, message).with_meta("retryAfterSeconds", wait.to_string()))
    }
}

/// A stored secret: HMAC(compare key, SHA-256(secret)).
struct StoredSecret(hmac::Tag);

struct StaticCredential {
    secret: StoredSecret,
    owner: Owner,
}

struct IntegratorCredential {
    secret: StoredSecret,
    tenant: String,
}

struct BasicUser {
    user: StoredSecret,
    hash: PasswordHash,
    owner: Owner,
}

/// Checks request credentials against the configured ones. Build it once; it is cheap to
/// share (`Send + Sync`).
pub struct Authenticator {
    compare_key: hmac::Key,
    bearer_tokens: Vec<StaticCredential>,
    api_keys: Vec<StaticCredential>,
    integrator_keys: Vec<IntegratorCredential>,
    basic_users: Vec<BasicUser>,
    basic_dummy: PasswordHash,
    jwt: Option<JwtVerifier>,
    throttle: Throttle,
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authenticator")
            .field("bearer_tokens", &self.bearer_tokens.len())
            .field("api_keys", &self.api_keys.len())
            .field("integrator_keys", &self.integrator_keys.len())
            .field("basic_users", &self.basic_users.len())
            .field("jwt", &self.jwt)
            .finish_non_exhaustive()
    }
}

/// Whether `tenant` is a usable tenant: 1-128 characters of `A-Z a-z 0-9 _ . : -`.
pub(crate) fn valid_tenant(tenant: &str) -> bool {
    !tenant.is_empty()
        && tenant.len() <= MAX_ID_LEN
        && tenant.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// Whether `principal` is usable: 1-256 bytes, no control characters.
pub(crate) fn valid_principal(principal: &str) -> bool {
    !principal.is_empty() && principal.len() <= MAX_PRINCIPAL_LEN && !principal.chars().any(char::is_control)
}

/// Whether `id` is a valid `X-Platform-User-Id`: 1-128 characters of `A-Z a-z 0-9 _ . : - @`.
pub fn valid_platform_user_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-' | b'@'))
}

fn check_owner(key: &str, tenant: &str, principal: Option<&str>) -> Result<(), AuthConfigError> {
    if !valid_tenant(tenant) {
        return Err(AuthConfigError::new(format!("{key}.tenant"), "must be 1-128 characters of A-Z a-z 0-9 _ . : -"));
    }
    if let Some(principal) = principal {
        if !valid_principal(principal) {
            return Err(AuthConfigError::new(
                format!("{key}.principal"),
                "must be 1-256 bytes without control characters",
            ));
        }
    }
    Ok(())
}

/// Picks the digest of an entry with `<name>-sha256` (hex) or `<name>` (plaintext).
pub(crate) fn entry_digest(
    key: &str,
    name: &str,
    hex: Option<&Redacted<String>>,
    plain: Option<&HashedSecret>,
) -> Result<[u8; 32], AuthConfigError> {
    match (hex, plain) {
        (Some(hex), None) => HashedSecret::from_hex(hex.expose())
            .map(|h| *h.digest())
            .map_err(|m| AuthConfigError::new(format!("{key}.{name}-sha256"), m)),
        (None, Some(plain)) => Ok(*plain.digest()),
        _ => Err(AuthConfigError::new(key, format!("set exactly one of `{name}-sha256` or `{name}`"))),
    }
}

/// A configured static secret (a bearer token or an API key): where it is set, the name
/// of its field, its two possible forms, and its owner.
struct StaticEntry<'a> {
    key: String,
    field: &'static str,
    sha256: Option<&'a Redacted<String>>,
    plain: Option<&'a HashedSecret>,
    tenant: &'a str,
    principal: &'a str,
}

impl Authenticator {
    /// Builds the authenticator from `config` and the environment (`env` reads a variable:
    /// `|name| std::env::var(name).ok()`). Errors name the offending key.
    pub fn new(config: &AuthConfig, env: impl Fn(&str) -> Option<String>) -> Result<Self, AuthConfigError> {
        let rng = SystemRandom::new();
        let compare_key = hmac::Key::generate(hmac::HMAC_SHA256, &rng)
            .map_err(|_| AuthConfigError::new("auth", "the system random source failed"))?;
        let store = |digest: &[u8; 32]| StoredSecret(hmac::sign(&compare_key, digest));
        let env_value = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let env_owner = || Owner { tenant: ENV_TENANT.to_owned(), principal: ENV_PRINCIPAL.to_owned() };

        // Every static secret, by digest, with where it was set: no secret may appear twice.
        let mut seen: BTreeMap<[u8; 32], String> = BTreeMap::new();
        let mut remember = |digest: [u8; 32], key: &str| match seen.insert(digest, key.to_owned()) {
            Some(first) => Err(AuthConfigError::new(key, format!("the same secret is already set by {first}"))),
            None => Ok(()),
        };
        // Tenants of credentials with a fixed principal, and where they were set.
        let mut fixed_tenants: BTreeMap<String, String> = BTreeMap::new();

        // Bearer tokens and API keys are the same kind of credential: a static secret with
        // a fixed owner, from the config list or one environment variable.
        let mut static_credentials = |entries: Vec<StaticEntry>, env_name: &str| {
            let mut credentials = Vec::new();
            for entry in entries {
                let digest = entry_digest(&entry.key, entry.field, entry.sha256, entry.plain)?;
                check_owner(&entry.key, entry.tenant, Some(entry.principal))?;
                remember(digest, &entry.key)?;
                let owner = Owner { tenant: entry.tenant.to_owned(), principal: entry.principal.to_owned() };
                fixed_tenants.entry(entry.tenant.to_owned()).or_insert(entry.key);
                credentials.push(StaticCredential { secret: store(&digest), owner });
            }
            if let Some(secret) = env_value(env_name) {
                let digest = sha256(secret.trim().as_bytes());
                remember(digest, env_name)?;
                fixed_tenants.entry(ENV_TENANT.to_owned()).or_insert_with(|| env_name.to_owned());
                credentials.push(StaticCredential { secret: store(&digest), owner: env_owner() });
            }
            Ok::<_, AuthConfigError>(credentials)
        };
        let bearer_entries = config.bearer_tokens.iter().enumerate().map(|(i, e)| StaticEntry {
            key: format!("auth.bearer-tokens[{i}]"),
            field: "token",
            sha256: e.token_sha256.as_ref(),
            plain: e.token.as_ref(),
            tenant: &e.tenant,
            principal: &e.principal,
        });
        let bearer_tokens = static_credentials(bearer_entries.collect(), ENV_HTTP_TOKEN)?;
        let api_key_entries = config.api_keys.iter().enumerate().map(|(i, e)| StaticEntry {
            key: format!("auth.api-keys[{i}]"),
            field: "key",
            sha256: e.key_sha256.as_ref(),
            plain: e.key.as_ref(),
            tenant: &e.tenant,
            principal: &e.principal,
        });
        let api_keys = static_credentials(api_key_entries.collect(), ENV_API_KEY)?;

        let mut basic_users = Vec::new();
        let mut user_names = BTreeSet::new();
        for (i, entry) in config.basic_users.iter().enumerate() {
            let key = format!("auth.basic-users[{i}]");
            if entry.user.is_empty() || entry.user.contains(':') || entry.user.chars().any(char::is_control) {
                return Err(AuthConfigError::new(
                    format!("{key}.user"),
                    "must be non-empty, without `:` or control characters",
                ));
            }
            if !user_names.insert(entry.user.as_str()) {
                return Err(AuthConfigError::new(format!("{key}.user"), "this user is listed twice"));
            }
            let hash = PasswordHash::parse(entry.password_hash.expose())
                .map_err(|m| AuthConfigError::new(format!("{key}.password-hash"), m))?;
            check_owner(&key, &entry.tenant, Some(&entry.principal))?;
            fixed_tenants.entry(entry.tenant.clone()).or_insert(key);
            let owner = Owner { tenant: entry.tenant.clone(), principal: entry.principal.clone() };
            basic_users.push(BasicUser { user: store(&sha256(entry.user.as_bytes())), hash, owner });
        }
        let basic_dummy =
            PasswordHash::dummy(basic_users.first().map(|u| u.hash.iterations()).unwrap_or(std::num::NonZeroU32::MIN));

        let mut integrator_keys = Vec::new();
        for (i, entry) in config.integrator_keys.iter().enumerate() {
            let key = format!("auth.integrator-keys[{i}]");
            let digest = entry_digest(&key, "key", entry.key_sha256.as_ref(), entry.key.as_ref())?;
            check_owner(&key, &entry.tenant, None)?;
            remember(digest, &key)?;
            if let Some(other) = fixed_tenants.get(&entry.tenant) {
                return Err(AuthConfigError::new(
                    format!("{key}.tenant"),
                    format!(
                        "tenant `{}` is also used by {other}; an integrator key may act as any principal of its \
                         tenant, so give it a tenant of its own",
                        entry.tenant
                    ),
                ));
            }
            integrator_keys.push(IntegratorCredential { secret: store(&digest), tenant: entry.tenant.clone() });
        }

        let jwt = config.jwt.as_ref().map(|jwt| jwt::build(jwt, &env_value)).transpose()?;

        let throttle = Throttle::new(&config.throttle);
        Ok(Authenticator {
            compare_key,
            bearer_tokens,
            api_keys,
            integrator_keys,
            basic_users,
            basic_dummy,
            jwt,
            throttle,
        })
    }

    /// Whether any credential is configured. When not, callers skip [`Self::authenticate`]
    /// and use [`Owner::anonymous`].
    pub fn enabled(&self) -> bool {
        !self.bearer_tokens.is_empty()
            || !self.api_keys.is_empty()
            || !self.integrator_keys.is_empty()
            || !self.basic_users.is_empty()
            || self.jwt.is_some()
    }

    /// The tenants the configured credentials name (bearer tokens, API keys, basic users,
    /// integrator keys): what the console offers before any task exists. JWT tenants
    /// come from the tokens' claims, so they are not known here.
    pub fn tenants(&self) -> BTreeSet<String> {
        let owners = self.bearer_tokens.iter().chain(&self.api_keys).map(|c| &c.owner);
        let owners = owners.chain(self.basic_users.iter().map(|u| &u.owner)).map(|o| o.tenant.clone());
        owners.chain(self.integrator_keys.iter().map(|k| k.tenant.clone())).collect()
    }

    /// Whether `digest` is the SHA-256 of a tenant's static secret (a bearer token, an
    /// API key or an integrator key): an operator token may be none of them.
    pub fn is_tenant_secret(&self, digest: &[u8; 32]) -> bool {
        self.find(&self.bearer_tokens, digest, |c| &c.secret).is_some()
            || self.find(&self.api_keys, digest, |c| &c.secret).is_some()
            || self.find(&self.integrator_keys, digest, |c| &c.secret).is_some()
    }

    fn bearer_enabled(&self) -> bool {
        !self.bearer_tokens.is_empty() || self.jwt.is_some()
    }

    fn api_key_enabled(&self) -> bool {
        !self.api_keys.is_empty() || !self.integrator_keys.is_empty()
    }

    /// Checks one request's credentials at `now` (Unix seconds, for JWT time checks), all
    /// but a Basic password, which is left to verify ([`Self::authenticate`] does, off
    /// the async workers).
    fn classify(&self, credentials: &RequestCredentials, now: i64) -> Check {
        self.check_cheap(credentials, now).unwrap_or_else(|e| Check::Done(Err(e)))
    }

    /// [`Self::classify`], with `?` for the refusals.
    fn check_cheap(&self, credentials: &RequestCredentials, now: i64) -> Result<Check, AuthError> {
        let present = |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
        let authorization = present(&credentials.authorization);
        let api_key = present(&credentials.api_key);
        let platform_user = present(&credentials.platform_user_id);

        if let Some(authorization) = authorization {
            if authorization.len() > MAX_CREDENTIAL_LEN {
                return Err(AuthError::Malformed);
            }
            let (scheme, value) = authorization.split_once(char::is_whitespace).unwrap_or((&authorization, ""));
            let value = value.trim();
            if scheme.eq_ignore_ascii_case("bearer") && self.bearer_enabled() {
                return self.bearer(value, now).map(|owner| Check::Done(Ok(owner)));
            }
            if scheme.eq_ignore_ascii_case("basic") && !self.basic_users.is_empty() {
                return self.basic(value).map(Check::Password);
            }
            // A scheme we do not serve (perhaps meant for a proxy): only an API key may
            // still authenticate the request.
            if api_key.is_none() {
                return Err(AuthError::UnsupportedScheme);
            }
        }

        let Some(api_key) = api_key else {
            return Err(AuthError::Missing);
        };
        if api_key.len() > MAX_CREDENTIAL_LEN {
            return Err(AuthError::Malformed);
        }
        let digest = sha256(api_key.as_bytes());
        match platform_user {
            None => {
                if let Some(found) = self.find(&self.api_keys, &digest, |c| &c.secret) {
                    return Ok(Check::Done(Ok(found.owner.clone())));
                }
                if self.find(&self.integrator_keys, &digest, |c| &c.secret).is_some() {
                    return Err(AuthError::PlatformUserRequired);
                }
                Err(AuthError::Invalid)
            }
            Some(user) => {
                let found = self.find(&self.integrator_keys, &digest, |c| &c.secret).ok_or(AuthError::Invalid)?;
                if !valid_platform_user_id(&user) {
                    return Err(AuthError::InvalidPlatformUserId);
                }
                Ok(Check::Done(Ok(Owner { tenant: found.tenant.clone(), principal: user })))
            }
        }
    }

    fn bearer(&self, token: &str, now: i64) -> Result<Owner, AuthError> {
        if token.is_empty() {
            return Err(AuthError::Malformed);
        }
        if let Some(found) = self.find(&self.bearer_tokens, &sha256(token.as_bytes()), |c| &c.secret) {
            return Ok(found.owner.clone());
        }
        match &self.jwt {
            Some(jwt) if jwt::looks_like_jwt(token) => Ok(jwt.verify(token, now)?),
            _ => Err(AuthError::Invalid),
        }
    }

    /// The Basic attempt in `value`, its password still to verify. An unknown user is
    /// verified against the dummy hash, so that timing does not tell which users exist.
    fn basic(&self, value: &str) -> Result<PasswordAttempt, AuthError> {
        let mut decoded = STANDARD_ANY_PAD.decode(value).map_err(|_| AuthError::Malformed)?;
        let colon = decoded.iter().position(|&b| b == b':').ok_or(AuthError::Malformed)?;
        let password = decoded.split_off(colon + 1);
        decoded.truncate(colon);
        let index = self.find_index(&self.basic_users, &sha256(&decoded), |u| &u.user);
        let found = index.map(|i| (i, self.basic_users[i].hash.clone()));
        Ok(PasswordAttempt { user: decoded, password, found })
    }

    /// The entry whose stored secret matches `digest`, compared in constant time
    /// (`hmac::verify`); every entry is checked.
    fn find<'a, T>(&self, entries: &'a [T], digest: &[u8; 32], secret: impl Fn(&T) -> &StoredSecret) -> Option<&'a T> {
        self.find_index(entries, digest, secret).map(|i| &entries[i])
    }

    /// [`Self::find`], as an index.
    fn find_index<T>(&self, entries: &[T], digest: &[u8; 32], secret: impl Fn(&T) -> &StoredSecret) -> Option<usize> {
        let mut found = None;
        for (i, entry) in entries.iter().enumerate() {
            let matches = hmac::verify(&self.compare_key, digest, secret(entry).0.as_ref()).is_ok();
            if matches && found.is_none() {
                found = Some(i);
            }
        }
        found
    }

    /// The `WWW-Authenticate` value of a 401: one challenge per configured scheme
    /// (`Bearer realm="a2ad", Basic realm="a2ad"`); empty when authentication is off.
    pub fn www_authenticate(&self) -> String {
        let mut challenges = Vec::new();
        if self.bearer_enabled() {
            challenges.push(format!("Bearer realm=\"{REALM}\""));
        }
        if !self.basic_users.is_empty() {
            challenges.push(format!("Basic realm=\"{REALM}\""));
        }
        if self.api_key_enabled() {
            challenges.push(format!("ApiKey realm=\"{REALM}\", header=\"{API_KEY_HEADER}\""));
        }
        challenges.join(", ")
    }

    /// The `WWW-Authenticate` value of the 401 that refused `credentials` with `error`: a
    /// bearer token that was sent and refused gets `error="invalid_token"` on its
    /// challenge (RFC 6750, section 3), so a client tells a wrong token from a missing one.
    pub fn www_authenticate_refusing(&self, credentials: &RequestCredentials, error: &AuthError) -> String {
        let challenges = self.www_authenticate();
        let sent_bearer = credentials
            .authorization
            .as_deref()
            .is_some_and(|a| a.trim_start().get(..7).is_some_and(|scheme| scheme.eq_ignore_ascii_case("bearer ")));
        let refused = matches!(error, AuthError::Invalid | AuthError::Malformed | AuthError::Jwt(_));
        match sent_bearer && refused && self.bearer_enabled() {
            true => challenges.replacen(
                &format!("Bearer realm=\"{REALM}\""),
                &format!("Bearer realm=\"{REALM}\", error=\"invalid_token\""),
                1,
            ),
            false => challenges,
        }
    }

    /// The card's `securitySchemes` and `securityRequirements`: `bearerAuth`, `basicAuth`
    /// and `apiKeyAuth` as configured, one requirement per scheme (any one suffices).
    pub fn security_schemes(&self) -> (BTreeMap<String, SecurityScheme>, Vec<SecurityRequirement>) {
        let mut schemes = BTreeMap::new();
        if self.bearer_enabled() {
            let description = match (self.bearer_tokens.is_empty(), self.jwt.is_some()) {
                (false, true) => "A bearer token or an HS256 JWT.",
                (true, true) => "An HS256 JWT.",
                _ => "A bearer token.",
            };
            schemes.insert(
                BEARER_AUTH.to_owned(),
                SecurityScheme::HttpAuthSecurityScheme(HttpAuthSecurityScheme {
                    description: Some(description.to_owned()),
                    scheme: "bearer".to_owned(),
                    bearer_format: self.jwt.as_ref().map(|_| "JWT".to_owned()),
                }),
            );
        }
        if !self.basic_users.is_empty() {
            schemes.insert(
                BASIC_AUTH.to_owned(),
                SecurityScheme::HttpAuthSecurityScheme(HttpAuthSecurityScheme {
                    description: Some("HTTP Basic.".to_owned()),
                    scheme: "basic".to_owned(),
                    bearer_format: None,
                }),
            );
        }
        if self.api_key_enabled() {
            let description = if self.integrator_keys.is_empty() {
                "An API key.".to_owned()
            } else {
                format!("An API key; an integrator key also sends {PLATFORM_USER_HEADER}.")
            };
            schemes.insert(
                API_KEY_AUTH.to_owned(),
                SecurityScheme::ApiKeySecurityScheme(ApiKeySecurityScheme {
                    description: Some(description),
                    location: "header".to_owned(),
                    name: API_KEY_HEADER.to_owned(),
                }),
            );
        }
        let requirements = schemes
            .keys()
            .map(|name| SecurityRequirement { schemes: BTreeMap::from([(name.clone(), StringList::default())]) })
            .collect();
        (schemes, requirements)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod throttle_tests;

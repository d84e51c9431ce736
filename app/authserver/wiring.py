"""What the composition root needs of the built-in authorization server, in one object.

``app.parts`` imports this module when the package is installed (its models complete the schema in any mode;
the server is built only with ``APP_AUTH_MODE=builtin``), and the CLI its ``commands``; nothing else in ``app``
imports ``app.authserver`` (a fork that brings its own IdP deletes the folder).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import urlsplit

import structlog
from mcp.server.auth.provider import TokenVerifier
from starlette.routing import BaseRoute

from app.auth.scopes import ScopeCatalog
from app.authserver.accounts import AccountRepository, Directory, seed_demo_accounts
from app.authserver.clients import CimdResolver, ClientKeys
from app.authserver.forms import Signer
from app.authserver.keys import load_keyring
from app.authserver.privacy import privacy
from app.authserver.protocol import ServerConfig, normalise_resource
from app.authserver.repository import REVOKED_ACCOUNTS, REVOKED_GRANTS, GrantRepository
from app.authserver.routes import RegistrationLimits, authorization_server_routes
from app.authserver.settings import AuthServerSettings
from app.authserver.signin import SignInLimits
from app.authserver.tokens import BuiltinTokenVerifier
from app.authserver.upstream import UpstreamProvider
from app.broadcast import Broadcast
from app.db import Database, DatabaseUnavailable, UnitOfWork
from app.db.cache import ReadCache
from app.limits import Limits, parse_rate
from app.net.guard import OutboundGuard
from app.observability.metrics import Metrics
from app.secret import GENERATED, load_secret
from app.settings import Settings, SettingsError

MODELS = "app.authserver.models"
# Grants whose state one worker keeps at once (a worker serving more linked users in one TTL reads the others).
GRANT_CACHE_ENTRIES = 4096
log = structlog.get_logger(__name__)


class BuiltinAuthorizationServer:
    """The built-in authorization server, for one process: its settings, accounts and start-up rules."""

    # What APP_SECRET_KEY signs for it (production refuses a generated key: app.parts.production_refusals).
    secret_use = "the sign-in forms"

    def __init__(self, settings: Settings, own: AuthServerSettings) -> None:
        self.settings = settings
        self.own = own
        self.accounts = Directory()

    def production_refusals(self) -> list[str]:
        if self.settings.production and not self.settings.allow_generated_keys and not self.own.oauth_signing_keys:
            return [f"APP_OAUTH_SIGNING_KEYS: APP_ENV=production needs the keys that sign access tokens; {GENERATED}"]
        return []

    def privacy(self) -> list[dict[str, str]]:
        """What it keeps about a person, for /privacy (app.directory)."""
        return privacy(self.own, self.settings.base_url)

    @property
    def seeds_demo_accounts(self) -> bool:
        return not self.settings.production or self.own.allow_demo_accounts

    def seed(self, uow: UnitOfWork) -> str:
        """alice and bob, when ``seeds_demo_accounts``."""
        return seed_demo_accounts(uow, self.own.demo_password)

    def demo_accounts_refusal(self, db: Database) -> str | None:
        """Production with the demo accounts (known password) still enabled: the line that refuses to serve."""
        if not self.settings.production or self.own.allow_demo_accounts:
            return None
        demo = db.read_sync(lambda uow: [a.username for a in uow.repository(AccountRepository).demo()
                                         if a.disabled_at is None])  # disabled: their password opens nothing
        if not demo:
            return None
        return (f"APP_ENV=production but demo accounts exist ({', '.join(demo)}): disable them with "
                "`python -m app users disable NAME`, or set APP_ALLOW_DEMO_ACCOUNTS=true")

    def upstream(self, guard: OutboundGuard) -> dict[str, UpstreamProvider]:
        """The sign-in providers, each fetched through a guard that opens the port its issuer names (a provider
        on 8443) and no other; one the guard would refuse anyway (a private address, http off loopback, not
        allow-listed) refuses to start, in one line, rather than fail each sign-in."""
        ports = {p for c in self.own.oidc_providers if (p := urlsplit(c.issuer).port) is not None}
        if ports - set(self.settings.outbound_ports):
            guard = OutboundGuard(allowlist=self.settings.outbound_allowlist,
                                  ports=[*self.settings.outbound_ports, *sorted(ports)])
        refused = [f"APP_OIDC_PROVIDERS: entry {c.id}: the outbound guard refuses its issuer ({why}); a private or "
                   "plain-http provider must be listed in APP_OUTBOUND_ALLOWLIST"
                   for c in self.own.oidc_providers
                   if (why := guard.refusal(c.issuer.rstrip("/") + "/.well-known/openid-configuration"))]
        if refused:
            raise SettingsError(refused)
        return {c.id: UpstreamProvider(c, guard, f"{self.settings.base_url}/login/{c.id}/callback")
                for c in self.own.oidc_providers}

    def build(self, db: Database, catalog: ScopeCatalog, guard: OutboundGuard, limits: Limits,
              metrics: Metrics | None, broadcast: Broadcast,
              forget: Callable[[UnitOfWork, str], int]) -> tuple[TokenVerifier, list[BaseRoute]]:
        """The verifier of the tokens it issues, and its endpoints (metadata, JWKS, authorize,
        token, ...). ``forget`` deletes what the features keep for an account, with the account
        (/account)."""
        settings, own = self.settings, self.own
        keys = load_keyring(own.oauth_signing_keys, settings.var_dir)  # production without keys was refused
        secret, _ = load_secret(settings)
        resource = normalise_resource(settings.mcp_url) or settings.mcp_url
        config = ServerConfig(issuer=settings.base_url, resources=(resource,), catalog=catalog, keys=keys,
                              access_ttl=own.oauth_access_token_ttl, refresh_ttl=own.oauth_refresh_token_ttl,
                              refresh_grace=own.oauth_refresh_grace, code_ttl=own.oauth_code_ttl,
                              dcr_unused_ttl=own.oauth_dcr_unused_ttl)
        routes = authorization_server_routes(
            config=config, db=db, cimd=CimdResolver(guard, db, catalog, own.oauth_cimd_hosts),
            client_keys=ClientKeys(guard), signer=Signer(secret), limits=limits,
            sign_in=SignInLimits(per_name=parse_rate(own.limit_login_per_name),
                                 per_address=parse_rate(own.limit_login_per_address),
                                 per_account=parse_rate(own.limit_login_per_account)),
            registration=RegistrationLimits(per_address=parse_rate(own.limit_registrations_per_address),
                                            per_network=parse_rate(own.limit_registrations_per_network),
                                            total=parse_rate(own.limit_registrations_total)),
            secure_cookies=settings.base_url.startswith("https://"), jwks=keys.public_jwks, metrics=metrics,
            registration_open=own.oauth_dcr, password_login=own.password_login,
            upstream=self.upstream(guard), forget=forget)
        publish_revocations(db, broadcast)

        verifier = BuiltinTokenVerifier(keys, issuer=settings.base_url, audience=resource, catalog=catalog,
                                        grant_active=grant_check(db, broadcast, own.oauth_grant_cache_ttl))
        return verifier, routes


# The channel revocations travel on: "grant <id>" or "account <id>" (all of its grants).
REVOCATIONS = "oauth.revocations"


def publish_revocations(db: Database, broadcast: Broadcast) -> None:
    """After every committed write that revoked grants (``REVOKED_GRANTS``/``REVOKED_ACCOUNTS`` notes), tell
    every process: this one's caches at once, the others through ``broadcast``."""

    async def committed(notes: Mapping[str, set[str]]) -> None:
        for kind, prefix in ((REVOKED_GRANTS, "grant"), (REVOKED_ACCOUNTS, "account")):
            for value in sorted(notes.get(kind, ())):
                await broadcast.publish(REVOCATIONS, f"{prefix} {value}")

    db.on_commit(committed)


async def announce_account_revoked(broadcast: Broadcast, account_id: str) -> bool:
    """For a process that serves nothing (the CLI): whether the servers sharing its Redis were told."""
    try:
        return await broadcast.publish(REVOCATIONS, f"account {account_id}")
    finally:
        await broadcast.aclose()


def grant_check(db: Database, broadcast: Broadcast, ttl: float) -> Callable[[str, str], Awaitable[bool]]:
    """Whether a token's grant still opens tools for its subject, without a database read per call.

    What a read found is kept ``ttl`` seconds per (grant, subject); a revocation committed in this process
    forgets it before the write returns, one committed elsewhere when its message arrives (Redis), or at the
    latest when the entry expires. A database that fails is never cached: the call gets its 503.
    """
    states: ReadCache[bool] = ReadCache(ttl, max_entries=GRANT_CACHE_ENTRIES)

    def revoked(message: str | None) -> None:
        kind, _, value = (message or "").partition(" ")
        # The keys are grant_active's (grant, subject) tuples; forget() hands them over as Hashable.
        if kind == "grant":
            states.forget(lambda key: isinstance(key, tuple) and key[0] == value)
        elif kind == "account":
            states.forget(lambda key: isinstance(key, tuple) and key[1] == value)
        else:  # None: the subscription was cut off and messages may have been lost
            states.invalidate()

    broadcast.subscribe(REVOCATIONS, revoked)
    # Grants whose use this process is recording now: the calls that read the row before that write commits
    # (a burst at the hour) do not write too; once it has, the row itself says it is fresh.
    writing: set[str] = set()

    async def read(grant_id: str, subject: str) -> bool:
        now = int(time.time())
        active, stale = await db.read(lambda uow: uow.repository(GrantRepository).grant_in_use(
            grant_id, subject, now))
        if stale and grant_id not in writing:  # the /account page's "last used", to the hour
            writing.add(grant_id)
            try:
                await db.write(lambda uow: uow.repository(GrantRepository).mark_used(grant_id, now))
            except DatabaseUnavailable:
                log.warning("oauth.last_used_not_recorded", grant=grant_id)  # the call itself goes on
            finally:
                writing.discard(grant_id)
        return active

    async def grant_active(grant_id: str, subject: str) -> bool:
        return await states.get((grant_id, subject), lambda: read(grant_id, subject))

    return grant_active

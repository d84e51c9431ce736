"""The built-in OAuth 2.1 authorization server: what ChatGPT links accounts through when you bring no IdP.

Endpoints (``routes.py``: metadata, JWKS, /token, /revoke, /introspect, /register, and the composition of
every route; ``signin.py``: the login and consent pages of /authorize; ``account.py``: /account;
``federation.py``: sign-in through an upstream provider), its pages (``pages.py``, from the autoescaped
templates in ``templates/``), authlib's grants with this server's rules (``grants.py``, ``server.py``),
client registration and metadata documents (``clients.py``), signing keys (``keys.py``), local accounts
(``accounts.py``), its settings (``settings.py``) and its commands (``commands.py``: ``users``, ``clients``).

Deletable: nothing in ``app`` imports this package but the composition root, through ``wiring.py`` (and the
CLI, ``commands.py``). A fork
that uses an external IdP deletes this folder, adds the migration that drops its tables
(``python -m app revision "drop the authorization server"``) and sets APP_AUTH_MODE=external
(docs/forking.md).
"""

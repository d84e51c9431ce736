"""The authorization server's own pages: login, consent and error, server-rendered.

Plain HTML with one inline ``<style>``: no JavaScript, no external assets, so the
responses can carry a strict Content-Security-Policy (``PAGE_CSP`` / ``page_csp``).
Localized in ``LANGUAGES``; ``negotiate`` picks one from OAuth ``ui_locales`` and
``Accept-Language``. Every interpolated value is HTML-escaped here: client names and
hosts come from untrusted client metadata documents.

Form-action and redirects: Chrome and Safari check ``form-action`` against the
redirect a form submission answers with, not only against the form's ``action``
(w3c/webappsec-csp#8). A login or consent POST that ends in a redirect to the
client's ``redirect_uri`` is blocked by ``form-action 'self'`` alone, so serve those
pages with ``page_csp(redirect_uri)``, which adds that redirect's origin.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from urllib.parse import urlsplit

from app.i18n import lookup

__all__ = [
    "CATALOG",
    "LANGUAGES",
    "LOGIN_ERRORS",
    "PAGE_CSP",
    "RESERVED_FIELDS",
    "consent_page",
    "error_page",
    "login_page",
    "negotiate",
    "page_csp",
    "text",
]

LANGUAGES = ("en", "es", "fr", "pt", "zh")

PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

# Error code -> catalog key (the same name): ``text(locale, LOGIN_ERRORS["csrf"])`` or ``text(locale, "csrf")``.
LOGIN_ERRORS: Mapping[str, str] = {"bad_credentials": "bad_credentials", "csrf": "csrf", "locked": "locked"}

# Names the pages' own fields use: a ``hidden`` entry with one of these would be submitted twice
# (a smuggled ``decision=approve`` before the button's ``deny``), so it is refused.
RESERVED_FIELDS = frozenset({"csrf_token", "username", "password", "decision"})

# The value of <html lang>: the strings below are Simplified Chinese and Brazilian Portuguese.
_HTML_LANG = {"en": "en", "es": "es", "fr": "fr", "pt": "pt-BR", "zh": "zh-Hans"}

# Placeholders: {client}, {host}, {account}. French puts a no-break space before "?" and ":".
CATALOG: Mapping[str, Mapping[str, str]] = {
    "en": {
        "login.title": "Sign in",
        "login.heading": "Sign in",
        "login.intro": "{client} ({host}) wants to access your account. Sign in to continue.",
        "login.username": "Username",
        "login.password": "Password",
        "login.submit": "Sign in",
        "bad_credentials": "The username or password is incorrect.",
        "csrf": "This form has expired. Please try again.",
        "locked": "Too many sign-in attempts. Please wait a few minutes and try again.",
        "consent.title": "Allow access?",
        "consent.heading": "Allow access to your account?",
        "consent.intro": "{client} ({host}) wants to access your account {account}.",
        "consent.scopes": "It will be able to:",
        "consent.no_scopes": "It only wants to know which account is yours (basic account identity).",
        "consent.signed_in_as": "Signed in as {account}",
        "consent.approve": "Allow",
        "consent.deny": "Deny",
        "error.title": "This sign-in request cannot continue",
        "error.heading": "This sign-in request cannot continue",
        "error.retry": "You can close this window and try again from the app.",
    },
    "es": {
        "login.title": "Iniciar sesión",
        "login.heading": "Iniciar sesión",
        "login.intro": "{client} ({host}) quiere acceder a tu cuenta. Inicia sesión para continuar.",
        "login.username": "Nombre de usuario",
        "login.password": "Contraseña",
        "login.submit": "Iniciar sesión",
        "bad_credentials": "El nombre de usuario o la contraseña no son correctos.",
        "csrf": "El formulario ha caducado. Vuelve a intentarlo.",
        "locked": "Demasiados intentos de inicio de sesión. Espera unos minutos y vuelve a intentarlo.",
        "consent.title": "¿Permitir el acceso?",
        "consent.heading": "¿Permitir el acceso a tu cuenta?",
        "consent.intro": "{client} ({host}) quiere acceder a tu cuenta {account}.",
        "consent.scopes": "Podrá:",
        "consent.no_scopes": "Solo quiere saber cuál es tu cuenta (identidad básica de la cuenta).",
        "consent.signed_in_as": "Sesión iniciada como {account}",
        "consent.approve": "Permitir",
        "consent.deny": "Denegar",
        "error.title": "No se puede continuar con esta solicitud de inicio de sesión",
        "error.heading": "No se puede continuar con esta solicitud de inicio de sesión",
        "error.retry": "Puedes cerrar esta ventana y volver a intentarlo desde la aplicación.",
    },
    "fr": {
        "login.title": "Connexion",
        "login.heading": "Connexion",
        "login.intro": "{client} ({host}) souhaite accéder à votre compte. Connectez-vous pour continuer.",
        "login.username": "Nom d’utilisateur",
        "login.password": "Mot de passe",
        "login.submit": "Se connecter",
        "bad_credentials": "Nom d’utilisateur ou mot de passe incorrect.",
        "csrf": "Le formulaire a expiré. Veuillez réessayer.",
        "locked": "Trop de tentatives de connexion. Patientez quelques minutes, puis réessayez.",
        "consent.title": "Autoriser l’accès\u00a0?",
        "consent.heading": "Autoriser l’accès à votre compte\u00a0?",
        "consent.intro": "{client} ({host}) souhaite accéder à votre compte {account}.",
        "consent.scopes": "Cette application pourra\u00a0:",
        "consent.no_scopes": "Elle souhaite uniquement savoir quel compte est le vôtre (identité de base du compte).",
        "consent.signed_in_as": "Connecté en tant que {account}",
        "consent.approve": "Autoriser",
        "consent.deny": "Refuser",
        "error.title": "Cette demande de connexion ne peut pas aboutir",
        "error.heading": "Cette demande de connexion ne peut pas aboutir",
        "error.retry": "Vous pouvez fermer cette fenêtre et réessayer depuis l’application.",
    },
    "pt": {
        "login.title": "Entrar",
        "login.heading": "Entrar",
        "login.intro": "{client} ({host}) quer acessar sua conta. Entre para continuar.",
        "login.username": "Nome de usuário",
        "login.password": "Senha",
        "login.submit": "Entrar",
        "bad_credentials": "Nome de usuário ou senha incorretos.",
        "csrf": "O formulário expirou. Tente novamente.",
        "locked": "Muitas tentativas de login. Aguarde alguns minutos e tente novamente.",
        "consent.title": "Permitir acesso?",
        "consent.heading": "Permitir acesso à sua conta?",
        "consent.intro": "{client} ({host}) quer acessar sua conta {account}.",
        "consent.scopes": "O aplicativo poderá:",
        "consent.no_scopes": "Ele só quer saber qual é a sua conta (identidade básica da conta).",
        "consent.signed_in_as": "Conectado como {account}",
        "consent.approve": "Permitir",
        "consent.deny": "Negar",
        "error.title": "Não é possível continuar esta solicitação de login",
        "error.heading": "Não é possível continuar esta solicitação de login",
        "error.retry": "Você pode fechar esta janela e tentar novamente pelo aplicativo.",
    },
    "zh": {
        "login.title": "登录",
        "login.heading": "登录",
        "login.intro": "{client}（{host}）想要访问您的账户。请登录以继续。",
        "login.username": "用户名",
        "login.password": "密码",
        "login.submit": "登录",
        "bad_credentials": "用户名或密码不正确。",
        "csrf": "表单已过期，请重试。",
        "locked": "登录尝试次数过多，请等待几分钟后再试。",
        "consent.title": "允许访问？",
        "consent.heading": "允许访问您的账户？",
        "consent.intro": "{client}（{host}）想要访问您的账户 {account}。",
        "consent.scopes": "它将能够：",
        "consent.no_scopes": "它只想知道哪个账户是您的（基本账户身份）。",
        "consent.signed_in_as": "当前登录账户：{account}",
        "consent.approve": "允许",
        "consent.deny": "拒绝",
        "error.title": "此登录请求无法继续",
        "error.heading": "此登录请求无法继续",
        "error.retry": "您可以关闭此窗口，然后在应用中重试。",
    },
}

_CSS = """\
:root{color-scheme:light dark;--bg:#f3f4f6;--card:#fff;--fg:#16181d;--muted:#4b5260;--border:#6b7280;\
--line:#d9dce1;--accent:#0b57d0;--on-accent:#fff;--focus:#0b57d0;--err-fg:#a4161a;--err-bg:#fdecec;--code-bg:#eef0f3}
@media (prefers-color-scheme:dark){:root{--bg:#0f1114;--card:#1b1e23;--fg:#eceef1;--muted:#b7bcc5;\
--border:#8c939e;--line:#343a42;--accent:#8ab4f8;--on-accent:#0a1b36;--focus:#8ab4f8;--err-fg:#ffb4ab;\
--err-bg:#3d1513;--code-bg:#2a2f36}}
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;min-height:100vh;display:flex;align-items:flex-start;justify-content:center;padding:2rem 1rem;\
background:var(--bg);color:var(--fg);font:1rem/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",\
"PingFang SC","Hiragino Sans GB","Microsoft YaHei","Noto Sans CJK SC",sans-serif}
main{width:100%;max-width:28rem;min-width:0;background:var(--card);border:1px solid var(--line);\
border-radius:12px;padding:1.5rem 1.25rem}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 1rem}
p,ul{margin:0 0 1rem}
ul{padding-left:1.25rem}
li+li{margin-top:.5rem}
bdi,.scope,.message{overflow-wrap:anywhere}
.muted{color:var(--muted)}
.error{padding:.75rem 1rem;border:1px solid var(--err-fg);border-left-width:4px;border-radius:8px;\
background:var(--err-bg);color:var(--err-fg)}
.field{margin:0 0 1rem}
label{display:block;font-weight:600;margin:0 0 .25rem}
input{display:block;width:100%;min-height:2.75rem;padding:.5rem .75rem;font:inherit;color:var(--fg);\
background:var(--card);border:1px solid var(--border);border-radius:8px}
input[aria-invalid=true]{border:2px solid var(--err-fg)}
small{display:block;font-size:.875rem;color:var(--muted)}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--code-bg);\
padding:0 .25rem;border-radius:4px;overflow-wrap:anywhere}
.actions{display:flex;flex-wrap:wrap;gap:.75rem;margin-top:1.5rem}
button{flex:1 1 8rem;min-height:2.75rem;padding:.5rem 1rem;font:inherit;font-weight:600;color:var(--fg);\
background:transparent;border:2px solid var(--border);border-radius:8px;cursor:pointer}
button.primary{color:var(--on-accent);background:var(--accent);border-color:var(--accent)}
:focus-visible,input:focus{outline:3px solid var(--focus);outline-offset:2px}
"""

_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::[0-9]{1,5})?")


def _e(value: object) -> str:
    """HTML-escape text for element content and double-quoted attribute values."""
    return escape(str(value), quote=True)


def _normalize(locale: str) -> str:
    return locale if locale in CATALOG else lookup(locale, LANGUAGES)


def _by_quality(accept_language: str) -> list[str]:
    """Accept-Language ranges, highest q first (ties keep header order); q=0 and malformed q dropped."""
    ranked: list[tuple[float, str]] = []
    for item in accept_language[:4096].split(","):
        tag, _, params = item.partition(";")
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 0.0
        if tag.strip() and 0.0 < quality <= 1.0:
            ranked.append((quality, tag.strip()))
    ranked.sort(key=lambda pair: -pair[0])
    return [tag for _, tag in ranked]


def negotiate(ui_locales: str | None, accept_language: str | None) -> str:
    """The page language: OAuth ``ui_locales`` (space-separated, in order) first, then Accept-Language, then en."""
    if ui_locales:
        found = lookup(ui_locales.split(), LANGUAGES, default="")
        if found:
            return found
    if accept_language:
        return lookup(_by_quality(accept_language), LANGUAGES)
    return "en"


def text(locale: str, key: str, **fmt: object) -> str:
    """The catalog string (plain text, NOT escaped), in ``locale`` or else English; KeyError for an unknown key."""
    template = CATALOG[_normalize(locale)].get(key) or CATALOG["en"][key]
    return template.format(**fmt) if fmt else template


def _markup(locale: str, key: str, **html_fragments: str) -> str:
    """A catalog string as HTML: the template is escaped, the fragments (already safe HTML) are inserted."""
    template = CATALOG[_normalize(locale)].get(key) or CATALOG["en"][key]
    return _e(template).format(**html_fragments)


def page_csp(redirect_uri: str | None = None) -> str:
    """``PAGE_CSP``, with ``redirect_uri``'s origin added to ``form-action`` (see the module docstring).

    Use it for the login and consent pages, whose submissions can end in a redirect to the client.
    A URI whose origin cannot be written as a CSP source adds its scheme only (``cursor:``, ``http:``).
    """
    if not redirect_uri:
        return PAGE_CSP
    parts = urlsplit(redirect_uri.strip())
    scheme = parts.scheme.lower()
    if not _SCHEME.fullmatch(scheme):
        return PAGE_CSP
    netloc = parts.netloc.rpartition("@")[2].lower()
    source = f"{scheme}://{netloc}" if scheme in ("http", "https") and _HOST.fullmatch(netloc) else f"{scheme}:"
    return PAGE_CSP.replace("form-action 'self'", f"form-action 'self' {source}")


def _page(locale: str, title: str, body: str) -> str:
    return (
        "<!doctype html>\n"
        f'<html lang="{_HTML_LANG[locale]}" dir="ltr">\n'
        "<head>\n"
        '<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="robots" content="noindex, nofollow">\n'
        f"<title>{_e(title)}</title>\n"
        f"<style>\n{_CSS}</style>\n"
        "</head>\n"
        "<body>\n"
        f"<main>\n{body}</main>\n"
        "</body>\n"
        "</html>\n"
    )


def _hidden_inputs(hidden: Mapping[str, str], csrf_token: str) -> str:
    clash = sorted(RESERVED_FIELDS.intersection(hidden))
    if clash:
        raise ValueError(f"hidden fields may not use the page's own field names: {', '.join(clash)}")
    fields: Iterable[tuple[str, str]] = [("csrf_token", csrf_token), *hidden.items()]
    return "".join(f'<input type="hidden" name="{_e(name)}" value="{_e(value)}">\n' for name, value in fields)


def _client(client_name: str, client_host: str) -> dict[str, str]:
    # <bdi>: an untrusted name cannot reorder the sentence around it with bidi controls.
    return {"client": f"<strong><bdi>{_e(client_name)}</bdi></strong>", "host": f"<bdi>{_e(client_host)}</bdi>"}


def login_page(
    *,
    locale: str,
    client_name: str,
    client_host: str,
    action: str,
    hidden: Mapping[str, str],
    csrf_token: str,
    error: str | None = None,
    username: str = "",
) -> str:
    """The sign-in form. ``error`` is already localized (``text(locale, LOGIN_ERRORS[code])``)."""
    locale = _normalize(locale)
    invalid = ' aria-invalid="true" aria-describedby="login-error"' if error else ""
    alert = f'<p id="login-error" class="error" role="alert">{_e(error)}</p>\n' if error else ""
    body = (
        f"<h1>{_e(text(locale, 'login.heading'))}</h1>\n"
        f'<p class="muted">{_markup(locale, "login.intro", **_client(client_name, client_host))}</p>\n'
        f"{alert}"
        f'<form method="post" action="{_e(action)}">\n'
        f"{_hidden_inputs(hidden, csrf_token)}"
        '<div class="field">\n'
        f'<label for="username">{_e(text(locale, "login.username"))}</label>\n'
        f'<input id="username" name="username" type="text" value="{_e(username)}" autocomplete="username"'
        f' autocapitalize="none" spellcheck="false" required autofocus{invalid}>\n'
        "</div>\n"
        '<div class="field">\n'
        f'<label for="password">{_e(text(locale, "login.password"))}</label>\n'
        f'<input id="password" name="password" type="password" autocomplete="current-password" required{invalid}>\n'
        "</div>\n"
        '<div class="actions">\n'
        f'<button type="submit" class="primary">{_e(text(locale, "login.submit"))}</button>\n'
        "</div>\n"
        "</form>\n"
    )
    return _page(locale, text(locale, "login.title"), body)


def consent_page(
    *,
    locale: str,
    client_name: str,
    client_host: str,
    account_name: str,
    scopes: Sequence[tuple[str, str]],
    action: str,
    hidden: Mapping[str, str],
    csrf_token: str,
) -> str:
    """Approve or deny: ``scopes`` are (name, localized description); none means identity only."""
    locale = _normalize(locale)
    account = f"<strong><bdi>{_e(account_name)}</bdi></strong>"
    if scopes:
        items = "".join(
            f'<li class="scope">{_e(description)} <small><code>{_e(name)}</code></small></li>\n'
            for name, description in scopes
        )
        grants = (
            f'<p id="scopes-label">{_e(text(locale, "consent.scopes"))}</p>\n'
            f'<ul aria-labelledby="scopes-label">\n{items}</ul>\n'
        )
    else:
        grants = f"<p>{_e(text(locale, 'consent.no_scopes'))}</p>\n"
    body = (
        f"<h1>{_e(text(locale, 'consent.heading'))}</h1>\n"
        f'<p>{_markup(locale, "consent.intro", account=account, **_client(client_name, client_host))}</p>\n'
        f"{grants}"
        f'<form method="post" action="{_e(action)}">\n'
        f"{_hidden_inputs(hidden, csrf_token)}"
        '<div class="actions">\n'
        f'<button type="submit" name="decision" value="deny">{_e(text(locale, "consent.deny"))}</button>\n'
        f'<button type="submit" name="decision" value="approve" class="primary">'
        f'{_e(text(locale, "consent.approve"))}</button>\n'
        "</div>\n"
        "</form>\n"
        f'<p class="muted">{_markup(locale, "consent.signed_in_as", account=f"<bdi>{_e(account_name)}</bdi>")}</p>\n'
    )
    return _page(locale, text(locale, "consent.title"), body)


def error_page(*, locale: str, message: str, message_lang: str | None = None) -> str:
    """A request that cannot go on. ``message`` is one sentence, maybe English from the OAuth library:
    pass ``message_lang="en"`` then, so screen readers read it in the right language."""
    locale = _normalize(locale)
    lang = f' lang="{_e(message_lang)}"' if message_lang else ""
    body = (
        f"<h1>{_e(text(locale, 'error.heading'))}</h1>\n"
        f'<p class="message"{lang}>{_e(message)}</p>\n'
        f'<p class="muted">{_e(text(locale, "error.retry"))}</p>\n'
    )
    return _page(locale, text(locale, "error.title"), body)

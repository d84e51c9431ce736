"""What the built-in authorization server keeps about a person, for the privacy page (/privacy),
in each of its pages' languages, written from its settings."""

from __future__ import annotations

from app.authserver.settings import AuthServerSettings
from app.directory.catalog import duration


def privacy(own: AuthServerSettings, base_url: str) -> list[dict[str, str]]:
    languages = ("en", "es", "fr", "pt", "zh")
    access = {lang: duration(lang, own.oauth_access_token_ttl) for lang in languages}
    renew = {lang: duration(lang, own.oauth_refresh_token_ttl) for lang in access}
    account = f"{base_url}/account"
    said = [{
        "en": "Your account: its name, its display name and email address if given, and a hash of "
              "your password (never the password itself).",
        "es": "Tu cuenta: su nombre, su nombre visible y su correo si los das, y un hash de tu "
              "contraseña (nunca la contraseña en sí).",
        "fr": "Votre compte : son nom, son nom d’affichage et son adresse e-mail s’ils sont "
              "donnés, et une empreinte de votre mot de passe (jamais le mot de passe lui-même).",
        "pt": "Sua conta: o nome, o nome de exibição e o e-mail, se informados, e um hash da sua "
              "senha (nunca a senha em si).",
        "zh": "你的账户：账户名、显示名称和电子邮件地址（如提供），以及你密码的哈希值（从不保存密"
              "码本身）。",
    }]
    if own.oidc_providers:
        names = ", ".join(p.name for p in own.oidc_providers)
        said.append({
            "en": f"Signing in with {names}: the identifier the provider gives you, and the name "
                  "and email address it shares.",
            "es": f"Al iniciar sesión con {names}: el identificador que te da el proveedor, y el "
                  "nombre y el correo que comparte.",
            "fr": f"Connexion avec {names} : l’identifiant que vous donne le fournisseur, ainsi "
                  "que le nom et l’adresse e-mail qu’il partage.",
            "pt": f"Login com {names}: o identificador que o provedor lhe dá, e o nome e o e-mail "
                  "que ele compartilha.",
            "zh": f"使用 {names} 登录时：该服务商给你的标识符，以及它分享的姓名和电子邮件地址。",
        })
    said.append({
        "en": f"When you link ChatGPT to your account, its access lasts {access['en']} at a time "
              f"and is renewed while ChatGPT keeps using it (at most {renew['en']} between uses); "
              "only hashes of these tokens are kept.",
        "es": f"Cuando vinculas ChatGPT a tu cuenta, su acceso dura {access['es']} cada vez y se "
              f"renueva mientras ChatGPT lo siga usando (como mucho {renew['es']} entre usos); "
              "solo se guardan hashes de estos tokens.",
        "fr": f"Quand vous liez ChatGPT à votre compte, son accès dure {access['fr']} à chaque "
              f"fois et se renouvelle tant que ChatGPT l’utilise (au plus {renew['fr']} entre deux "
              "utilisations) ; seules des empreintes de ces jetons sont conservées.",
        "pt": f"Quando você vincula o ChatGPT à sua conta, o acesso dura {access['pt']} de cada "
              f"vez e é renovado enquanto o ChatGPT o usar (no máximo {renew['pt']} entre usos); "
              "só hashes desses tokens são guardados.",
        "zh": f"当你将 ChatGPT 关联到你的账户时，其访问权限每次持续 {access['zh']}，在 ChatGPT "
              f"持续使用期间会续期（两次使用之间最长 {renew['zh']}）；只保存这些令牌的哈希值。",
    })
    said.append({
        "en": f"At {account} you see the apps linked to your account and disconnect them: their "
              "access ends at once.",
        "es": f"En {account} ves las apps vinculadas a tu cuenta y puedes desconectarlas: su "
              "acceso termina al momento.",
        "fr": f"Sur {account}, vous voyez les apps liées à votre compte et pouvez les déconnecter "
              ": leur accès prend fin immédiatement.",
        "pt": f"Em {account} você vê os apps vinculados à sua conta e pode desconectá-los: o "
              "acesso deles termina na hora.",
        "zh": f"在 {account} 你可以查看与账户关联的应用并断开连接：其访问权限会立即终止。",
    })
    return said

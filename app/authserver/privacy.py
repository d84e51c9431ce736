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
        "en": "Your account: its name, its display name and email address if given, and your "
              "password in a form that cannot be read back (a hash), never the password itself.",
        "es": "Tu cuenta: su nombre, su nombre visible y su correo si los das, y tu contraseña en "
              "una forma que no se puede leer de vuelta (un hash), nunca la contraseña en sí.",
        "fr": "Votre compte : son nom, son nom d’affichage et son adresse e-mail s’ils sont "
              "donnés, et votre mot de passe sous une forme qui ne permet pas de le relire (une "
              "empreinte), jamais le mot de passe lui-même.",
        "pt": "Sua conta: o nome, o nome de exibição e o e-mail, se informados, e sua senha numa "
              "forma que não pode ser lida de volta (um hash), nunca a senha em si.",
        "zh": "你的账户：账户名、显示名称和电子邮件地址（如提供），以及无法还原的密码形式（哈希值"
              "），从不保存密码本身。",
    }]
    if own.oidc_providers:
        names = ", ".join(p.name for p in own.oidc_providers)
        said.append({
            "en": f"Signing in with {names}: the identifier the provider gives you, and the name "
                  "and email address it shares.",
            "es": f"Al iniciar sesión con {names}: el identificador que te da el proveedor, y el "
                  "nombre y el correo que comparte.",
            "fr": f"Connexion avec {names} : l’identifiant que vous donne le fournisseur, ainsi "
                  "que le nom et l’adresse e-mail qu’il partage.",
            "pt": f"Login com {names}: o identificador que o provedor lhe dá, e o nome e o e-mail "
                  "que ele compartilha.",
            "zh": f"使用 {names} 登录时：该服务商给你的标识符，以及它分享的姓名和电子邮件地址。",
        })
    said.append({
        "en": f"When you link ChatGPT to your account, its access lasts {access['en']} at a time "
              "and is renewed while ChatGPT keeps using it; the link ends by itself if ChatGPT "
              f"does not use it for {renew['en']}. Only the renewal tokens are kept, in a form "
              "that cannot be used (a hash).",
        "es": f"Cuando vinculas ChatGPT a tu cuenta, su acceso dura {access['es']} cada vez y se "
              "renueva mientras ChatGPT lo siga usando; el vínculo termina solo si ChatGPT no lo "
              f"usa durante {renew['es']}. Solo se guardan los tokens de renovación, en una forma "
              "que no se puede usar (un hash).",
        "fr": f"Quand vous liez ChatGPT à votre compte, son accès dure {access['fr']} à chaque "
              "fois et se renouvelle tant que ChatGPT l’utilise ; le lien prend fin de lui-même "
              f"si ChatGPT ne l’utilise pas pendant {renew['fr']}. Seuls les jetons de "
              "renouvellement sont conservés, sous une forme inutilisable (une empreinte).",
        "pt": f"Quando você vincula o ChatGPT à sua conta, o acesso dura {access['pt']} de cada "
              "vez e é renovado enquanto o ChatGPT o usar; o vínculo termina sozinho se o ChatGPT "
              f"não o usar por {renew['pt']}. Só os tokens de renovação são guardados, numa forma "
              "que não pode ser usada (um hash).",
        "zh": f"当你将 ChatGPT 关联到你的账户时，其访问权限每次持续 {access['zh']}，在 ChatGPT "
              f"持续使用期间会续期；如果 ChatGPT 连续 {renew['zh']}未使用，关联会自动结束。只保存续"
              "期令牌，且以无法使用的形式（哈希值）保存。",
    })
    said.append({
        "en": "A record of each app you link (which app, what it may do, when it was linked and "
              "last used) stays with your account, also after you disconnect it.",
        "es": "Un registro de cada app que vinculas (qué app, qué puede hacer, cuándo se vinculó "
              "y cuándo se usó por última vez) queda con tu cuenta, también después de "
              "desconectarla.",
        "fr": "Une trace de chaque app que vous liez (laquelle, ce qu’elle peut faire, quand elle "
              "a été liée et utilisée pour la dernière fois) reste avec votre compte, même après "
              "que vous l’avez déconnectée.",
        "pt": "Um registro de cada app que você vincula (qual app, o que ele pode fazer, quando "
              "foi vinculado e usado pela última vez) fica com a sua conta, mesmo depois que você "
              "o desconecta.",
        "zh": "你关联的每个应用都会留下一条记录（哪个应用、它能做什么、何时关联、最后一次使用的时"
              "间），即使断开连接后也会随账户保留。",
    })
    said.append({
        "en": f"At {account} you see the apps linked to your account and can disconnect them: "
              "their access ends within seconds. There too you can delete your account: it is "
              "deleted at once, with the apps linked to it and what the app keeps for you (the "
              "contents of your files shortly after); only its number stays, with no name or "
              "address, so that nothing is kept for it afterwards. The logs are kept as said "
              "above.",
        "es": f"En {account} ves las apps vinculadas a tu cuenta y puedes desconectarlas: su "
              "acceso termina en unos segundos. Allí también puedes eliminar tu cuenta: se "
              "elimina al instante, con las apps vinculadas y lo que la app guarda para ti (el "
              "contenido de tus archivos poco después); solo queda su número, sin nombre ni "
              "dirección, para que no se guarde nada más para ella. Los registros se conservan "
              "como se dice arriba.",
        "fr": f"Sur {account}, vous voyez les apps liées à votre compte et pouvez les "
              "déconnecter : leur accès prend fin en quelques secondes. Vous pouvez aussi y "
              "supprimer votre compte : il est supprimé aussitôt, avec les apps qui y sont liées "
              "et ce que l’app conserve pour vous (le contenu de vos fichiers peu après) ; seul "
              "son numéro reste, sans nom ni adresse, pour que rien ne soit plus conservé pour "
              "lui. Les journaux sont conservés comme indiqué plus haut.",
        "pt": f"Em {account} você vê os apps vinculados à sua conta e pode desconectá-los: o "
              "acesso deles termina em segundos. Lá você também pode excluir sua conta: ela é "
              "excluída na hora, com os apps vinculados e o que o app guarda para você (o "
              "conteúdo dos seus arquivos pouco depois); só o número dela fica, sem nome nem "
              "endereço, para que nada mais seja guardado para ela. Os registros são mantidos "
              "como dito acima.",
        "zh": f"在 {account} 你可以查看与账户关联的应用并断开连接：其访问权限会在几秒内终止。你也"
              "可以在那里删除账户：账户会立即删除，连同与其关联的应用以及应用为你保存的内容（文件"
              "内容稍后删除）；只保留其编号（不含姓名或地址），以免之后再为其保存任何内容。日志按"
              "上文所述保留。",
    })
    return said

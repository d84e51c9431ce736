"""The words of the privacy and terms pages, in each of ``LANGUAGES``. Placeholders in braces are
filled with escaped values (the operator's name, a duration, a link) by the pages. What a part
keeps about people is said by the part itself (``Feature.privacy``, the authorization server's
``privacy()``), beside its code: deleting the part deletes its sentences."""

from __future__ import annotations

from collections.abc import Mapping

LANGUAGES = ("en", "es", "fr", "pt", "zh")
# The html element's lang: the strings are Simplified Chinese and Brazilian Portuguese.
HTML_LANG = {"en": "en", "es": "es", "fr": "fr", "pt": "pt-BR", "zh": "zh-Hans"}

CATALOG: Mapping[str, Mapping[str, str]] = {
    "en": {
        "privacy_title": "Privacy policy",
        "terms_title": "Terms of use",
        "the_operator": "the operator of {app}",
        "privacy_intro": "{Operator} runs {app} at {origin}, an app you use from ChatGPT. This "
                         "page says what it keeps about you, for how long, and how to have it "
                         "removed. It is written from the server's own configuration.",
        "kept_heading": "What is kept",
        "logs": "Each request is logged: its time, path, result and duration, the network address "
                "it came from and the tool it called. Logs never hold passwords, tokens or the "
                "contents of your files; they are kept as long as {operator} keeps its server "
                "logs.",
        "limits": "Your network address is counted to limit how often tools and sign-in are used; "
                  "each count is forgotten when its time window ends.",
        "shared_heading": "Who else sees it",
        "shared": "Nothing is sold. The server sends data about you to no one, except to the "
                  "sign-in provider you choose, if any, and it fetches the files you share from "
                  "the address ChatGPT gives.",
        "rights_heading": "Your choices",
        "rights": "To see, correct or delete what is kept about you, write to {contact}.",
        "no_contact": "the operator of this server",
        "terms_intro": "These terms cover your use of {app} at {origin}, run by {operator}.",
        "terms_service": "The service is provided as it is, without warranty. {Operator} may "
                         "change or stop it at any time.",
        "terms_use": "Do not use it to break the law, to harm others, or to overload or attack "
                     "the service.",
        "terms_privacy": "What it keeps about you is described in the {privacy}.",
        "terms_law": "These terms are governed by the law of {jurisdiction}.",
        "terms_contact": "Questions: {contact}.",
        "privacy_link": "privacy policy",
        "seconds": "{n} seconds",
        "minutes": "{n} minutes",
        "hours": "{n} hours",
        "days": "{n} days",
        "day": "1 day",
        "hour": "1 hour",
        "minute": "1 minute",
        "second": "1 second",
    },
    "es": {
        "privacy_title": "Política de privacidad",
        "terms_title": "Condiciones de uso",
        "the_operator": "el operador de {app}",
        "privacy_intro": "{Operator} opera {app} en {origin}, una app que usas desde ChatGPT. "
                         "Esta página dice qué guarda sobre ti, durante cuánto tiempo y cómo "
                         "hacer que lo borren. Está escrita a partir de la propia configuración "
                         "del servidor.",
        "kept_heading": "Qué se guarda",
        "logs": "Cada petición queda registrada: su hora, ruta, resultado y duración, la "
                "dirección de red de la que vino y la herramienta que llamó. Los registros nunca "
                "contienen contraseñas, tokens ni el contenido de tus archivos; se guardan "
                "mientras {operator} conserve los registros de su servidor.",
        "limits": "Se cuenta tu dirección de red para limitar la frecuencia de uso de las "
                  "herramientas y del inicio de sesión; cada recuento se olvida al terminar su "
                  "ventana de tiempo.",
        "shared_heading": "Quién más lo ve",
        "shared": "Nada se vende. El servidor no envía datos sobre ti a nadie, salvo al proveedor "
                  "de inicio de sesión que elijas, si lo hay, y descarga los archivos que "
                  "compartes desde la dirección que da ChatGPT.",
        "rights_heading": "Tus opciones",
        "rights": "Para ver, corregir o borrar lo que se guarda sobre ti, escribe a {contact}.",
        "no_contact": "el operador de este servidor",
        "terms_intro": "Estas condiciones cubren tu uso de {app} en {origin}, operado por "
                       "{operator}.",
        "terms_service": "El servicio se ofrece tal cual, sin garantía. {Operator} puede "
                         "cambiarlo o detenerlo en cualquier momento.",
        "terms_use": "No lo uses para infringir la ley, dañar a otros, ni para sobrecargar o "
                     "atacar el servicio.",
        "terms_privacy": "Lo que guarda sobre ti se describe en la {privacy}.",
        "terms_law": "Estas condiciones se rigen por la ley de {jurisdiction}.",
        "terms_contact": "Preguntas: {contact}.",
        "privacy_link": "política de privacidad",
        "seconds": "{n} segundos",
        "minutes": "{n} minutos",
        "hours": "{n} horas",
        "days": "{n} días",
        "day": "1 día",
        "hour": "1 hora",
        "minute": "1 minuto",
        "second": "1 segundo",
    },
    "fr": {
        "privacy_title": "Politique de confidentialité",
        "terms_title": "Conditions d’utilisation",
        "the_operator": "l’exploitant de {app}",
        "privacy_intro": "{Operator} exploite {app} sur {origin}, une app que vous utilisez "
                         "depuis ChatGPT. Cette page dit ce qu’elle conserve sur vous, combien de "
                         "temps, et comment le faire effacer. Elle est écrite d’après la "
                         "configuration même du serveur.",
        "kept_heading": "Ce qui est conservé",
        "logs": "Chaque requête est journalisée : son heure, son chemin, son résultat et sa "
                "durée, l’adresse réseau d’où elle vient et l’outil appelé. Les journaux ne "
                "contiennent jamais de mot de passe, de jeton ni le contenu de vos fichiers ; ils "
                "sont conservés aussi longtemps que {operator} garde les journaux de son serveur.",
        "limits": "Votre adresse réseau est comptée pour limiter la fréquence d’utilisation des "
                  "outils et de la connexion ; chaque décompte est oublié à la fin de sa fenêtre "
                  "de temps.",
        "shared_heading": "Qui d’autre y a accès",
        "shared": "Rien n’est vendu. Le serveur n’envoie de données sur vous à personne, sauf au "
                  "fournisseur de connexion que vous choisissez, le cas échéant, et il télécharge "
                  "les fichiers que vous partagez à l’adresse que donne ChatGPT.",
        "rights_heading": "Vos choix",
        "rights": "Pour consulter, corriger ou effacer ce qui est conservé sur vous, écrivez à "
                  "{contact}.",
        "no_contact": "l’exploitant de ce serveur",
        "terms_intro": "Ces conditions couvrent votre utilisation de {app} sur {origin}, "
                       "exploitée par {operator}.",
        "terms_service": "Le service est fourni tel quel, sans garantie. {Operator} peut le "
                         "modifier ou l’arrêter à tout moment.",
        "terms_use": "Ne l’utilisez pas pour enfreindre la loi, nuire à autrui, ni pour "
                     "surcharger ou attaquer le service.",
        "terms_privacy": "Ce qu’il conserve sur vous est décrit dans la {privacy}.",
        "terms_law": "Ces conditions sont régies par le droit de {jurisdiction}.",
        "terms_contact": "Questions : {contact}.",
        "privacy_link": "politique de confidentialité",
        "seconds": "{n} secondes",
        "minutes": "{n} minutes",
        "hours": "{n} heures",
        "days": "{n} jours",
        "day": "1 jour",
        "hour": "1 heure",
        "minute": "1 minute",
        "second": "1 seconde",
    },
    "pt": {
        "privacy_title": "Política de privacidade",
        "terms_title": "Termos de uso",
        "the_operator": "o operador de {app}",
        "privacy_intro": "{Operator} opera {app} em {origin}, um app que você usa pelo ChatGPT. "
                         "Esta página diz o que ele guarda sobre você, por quanto tempo e como "
                         "pedir que seja apagado. Ela é escrita a partir da própria configuração "
                         "do servidor.",
        "kept_heading": "O que é guardado",
        "logs": "Cada requisição é registrada: horário, caminho, resultado e duração, o endereço "
                "de rede de onde veio e a ferramenta chamada. Os registros nunca contêm senhas, "
                "tokens nem o conteúdo dos seus arquivos; são guardados enquanto {operator} "
                "mantiver os registros do servidor.",
        "limits": "Seu endereço de rede é contado para limitar a frequência de uso das "
                  "ferramentas e do login; cada contagem é esquecida ao fim da sua janela de "
                  "tempo.",
        "shared_heading": "Quem mais vê",
        "shared": "Nada é vendido. O servidor não envia dados sobre você a ninguém, exceto ao "
                  "provedor de login que você escolher, se houver, e baixa os arquivos que você "
                  "compartilha do endereço que o ChatGPT fornece.",
        "rights_heading": "Suas opções",
        "rights": "Para ver, corrigir ou apagar o que é guardado sobre você, escreva para "
                  "{contact}.",
        "no_contact": "o operador deste servidor",
        "terms_intro": "Estes termos cobrem o seu uso de {app} em {origin}, operado por "
                       "{operator}.",
        "terms_service": "O serviço é oferecido como está, sem garantia. {Operator} pode "
                         "alterá-lo ou encerrá-lo a qualquer momento.",
        "terms_use": "Não o use para violar a lei, prejudicar outras pessoas, nem para "
                     "sobrecarregar ou atacar o serviço.",
        "terms_privacy": "O que ele guarda sobre você está descrito na {privacy}.",
        "terms_law": "Estes termos são regidos pela lei de {jurisdiction}.",
        "terms_contact": "Dúvidas: {contact}.",
        "privacy_link": "política de privacidade",
        "seconds": "{n} segundos",
        "minutes": "{n} minutos",
        "hours": "{n} horas",
        "days": "{n} dias",
        "day": "1 dia",
        "hour": "1 hora",
        "minute": "1 minuto",
        "second": "1 segundo",
    },
    "zh": {
        "privacy_title": "隐私政策",
        "terms_title": "使用条款",
        "the_operator": "{app} 的运营方",
        "privacy_intro": "{Operator} 在 {origin} 运营 {app}，这是你在 ChatGPT 中使用的应用。本页说"
                         "明它保存了你的哪些信息、保存多久，以及如何删除。本页根据服务器自身的配置"
                         "生成。",
        "kept_heading": "保存的内容",
        "logs": "每个请求都会记录：时间、路径、结果和耗时、来源网络地址以及调用的工具。日志从不包"
                "含密码、令牌或你文件的内容；其保存期限与 {operator} 保存服务器日志的期限相同。",
        "limits": "系统会统计你的网络地址，以限制工具和登录的使用频率；每个计数在其时间窗口结束后"
                  "即被遗忘。",
        "shared_heading": "还有谁能看到",
        "shared": "不会出售任何数据。服务器不会把你的数据发送给任何人，除非发送给你选择的登录服务"
                  "商（如有）；它会从 ChatGPT 提供的地址下载你分享的文件。",
        "rights_heading": "你的选择",
        "rights": "如需查看、更正或删除保存的有关你的信息，请联系 {contact}。",
        "no_contact": "本服务器的运营方",
        "terms_intro": "本条款适用于你对 {origin} 上由 {operator} 运营的 {app} 的使用。",
        "terms_service": "本服务按现状提供，不作任何保证。{operator} 可随时更改或停止本服务。",
        "terms_use": "不得利用本服务违反法律、伤害他人，或使服务过载、攻击服务。",
        "terms_privacy": "它保存的有关你的信息见{privacy}。",
        "terms_law": "本条款受 {jurisdiction} 法律管辖。",
        "terms_contact": "如有疑问：{contact}。",
        "privacy_link": "隐私政策",
        "seconds": "{n} 秒",
        "minutes": "{n} 分钟",
        "hours": "{n} 小时",
        "days": "{n} 天",
        "day": "1 天",
        "hour": "1 小时",
        "minute": "1 分钟",
        "second": "1 秒",
    },
}


def duration(locale: str, seconds: int) -> str:
    """``seconds`` in the largest unit it is a whole number of (3600: "1 hour", 5400: "90
    minutes")."""
    strings = CATALOG[locale]
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return strings[unit] if n == 1 else strings[f"{unit}s"].format(n=n)
    return strings["seconds"].format(n=seconds)

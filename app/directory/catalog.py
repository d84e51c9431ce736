"""The words of the privacy and terms pages, in each of ``LANGUAGES``. Placeholders in braces are
filled with escaped values (the operator's name, a duration, a link) by the pages; French puts a
narrow no-break space (U+202F) before its colons and semicolons. What a part
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
        "languages": "Languages",
        "the_operator": "the operator of {app}",
        "The_operator": "The operator of {app}",
        "privacy_intro": "{Operator} runs {app} at {origin}, an app you use from ChatGPT. This "
                         "page says what the app keeps about you, for how long, and who else sees "
                         "it. It is written from the server's own configuration.",
        "kept_heading": "What is kept",
        "logs": "Each request is logged: its time, path, result and duration, the network address "
                "it came from, the tool it called, and the identifiers that go with it (your "
                "account's, the linked app's, and those ChatGPT sends for your conversation and "
                "organization). Logs never hold passwords or tokens; an error while reading a "
                "file may quote a few words of it. Logs are kept as long as {operator} keeps its "
                "server logs.",
        "limits": "Your network address, or your account when you are signed in, is counted to "
                  "limit how often tools and sign-in are used; each count is forgotten when its "
                  "time window ends.",
        "shared_heading": "Who else sees it",
        "shared_chatgpt": "What the tools answer (your saved recipes, what a file holds, your "
                          "profile) goes back to ChatGPT, where OpenAI's own privacy policy "
                          "applies.",
        "shared_storage": "What is kept is in this server's database and file storage, which "
                          "{operator} runs or rents. Nothing is sold.",
        "shared_fetch": "The server fetches the files you share from the address ChatGPT gives "
                        "it, and signs you in through the provider you choose, if any.",
        "shared_traces": "Traces of each request (its timings, your network address and the "
                         "account it acts for) are sent to the monitoring service {operator} uses.",
        "rights_heading": "Your choices",
        "rights": "To see, correct or delete what is kept about you, your account included, write "
                  "to {contact}.",
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
        "languages": "Idiomas",
        "the_operator": "el operador de {app}",
        "The_operator": "El operador de {app}",
        "privacy_intro": "{Operator} opera {app} en {origin}, una app que usas desde ChatGPT. "
                         "Esta página dice qué guarda la app sobre ti, durante cuánto tiempo y "
                         "quién más lo ve. Está escrita a partir de la propia configuración del "
                         "servidor.",
        "kept_heading": "Qué se guarda",
        "logs": "Cada petición queda registrada: su hora, ruta, resultado y duración, la "
                "dirección de red de la que vino, la herramienta que llamó y los identificadores "
                "que la acompañan (el de tu cuenta, el de la app vinculada y los que ChatGPT "
                "envía para tu conversación y tu organización). Los registros nunca contienen "
                "contraseñas ni tokens; un error al leer un archivo puede citar unas palabras de "
                "él. Se guardan mientras {operator} conserve los registros de su servidor.",
        "limits": "Se cuenta tu dirección de red, o tu cuenta si has iniciado sesión, para "
                  "limitar la frecuencia de uso de las herramientas y del inicio de sesión; cada "
                  "recuento se olvida al terminar su ventana de tiempo.",
        "shared_heading": "Quién más lo ve",
        "shared_chatgpt": "Lo que responden las herramientas (tus recetas guardadas, lo que "
                          "contiene un archivo, tu perfil) vuelve a ChatGPT, donde se aplica la "
                          "política de privacidad de OpenAI.",
        "shared_storage": "Lo que se guarda está en la base de datos y el almacenamiento de "
                          "archivos de este servidor, que {operator} gestiona o alquila. Nada se "
                          "vende.",
        "shared_fetch": "El servidor descarga los archivos que compartes desde la dirección que "
                        "le da ChatGPT, y te inicia sesión a través del proveedor que elijas, si "
                        "lo hay.",
        "shared_traces": "Las trazas de cada petición (sus tiempos, tu dirección de red y la "
                         "cuenta para la que actúa) se envían al servicio de monitorización que "
                         "usa {operator}.",
        "rights_heading": "Tus opciones",
        "rights": "Para ver, corregir o borrar lo que se guarda sobre ti, incluida tu cuenta, "
                  "contacta con {contact}.",
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
        "languages": "Langues",
        "the_operator": "l’exploitant de {app}",
        "The_operator": "L’exploitant de {app}",
        "privacy_intro": "{Operator} exploite {app} sur {origin}, une app que vous utilisez "
                         "depuis ChatGPT. Cette page dit ce que le service conserve sur vous, "
                         "combien de temps, et qui d’autre y a accès. Elle est écrite d’après la "
                         "configuration même du serveur.",
        "kept_heading": "Ce qui est conservé",
        "logs": "Chaque requête est journalisée : son heure, son chemin, son résultat et sa "
                "durée, l’adresse réseau d’où elle vient, l’outil appelé et les identifiants qui "
                "l’accompagnent (celui de votre compte, celui de l’app liée, et ceux que ChatGPT "
                "envoie pour votre conversation et votre organisation). Les journaux ne "
                "contiennent jamais de mot de passe ni de jeton ; une erreur de lecture d’un "
                "fichier peut en citer quelques mots. Ils sont conservés aussi longtemps que "
                "{operator} garde les journaux de son serveur.",
        "limits": "Votre adresse réseau, ou votre compte si vous êtes connecté, est comptée pour "
                  "limiter la fréquence d’utilisation des outils et de la connexion ; chaque "
                  "décompte est oublié à la fin de sa fenêtre de temps.",
        "shared_heading": "Qui d’autre y a accès",
        "shared_chatgpt": "Ce que répondent les outils (vos recettes enregistrées, le contenu "
                          "d’un fichier, votre profil) repart vers ChatGPT, où s’applique la "
                          "politique de confidentialité d’OpenAI.",
        "shared_storage": "Ce qui est conservé se trouve dans la base de données et le stockage "
                          "de fichiers de ce serveur, que {operator} exploite ou loue. Rien n’est "
                          "vendu.",
        "shared_fetch": "Le serveur télécharge les fichiers que vous partagez à l’adresse que lui "
                        "donne ChatGPT, et vous connecte par le fournisseur que vous choisissez, "
                        "le cas échéant.",
        "shared_traces": "Les traces de chaque requête (ses durées, votre adresse réseau et le "
                         "compte pour lequel elle agit) sont envoyées au service de supervision "
                         "qu’utilise {operator}.",
        "rights_heading": "Vos choix",
        "rights": "Pour consulter, corriger ou effacer ce qui est conservé sur vous, votre compte "
                  "compris, écrivez à {contact}.",
        "no_contact": "l’exploitant de ce serveur",
        "terms_intro": "Ces conditions couvrent votre utilisation de {app} sur {origin}, service "
                       "exploité par {operator}.",
        "terms_service": "Le service est fourni tel quel, sans garantie. {Operator} peut le "
                         "modifier ou l’arrêter à tout moment.",
        "terms_use": "Ne l’utilisez pas pour enfreindre la loi, nuire à autrui, ni pour "
                     "surcharger ou attaquer le service.",
        "terms_privacy": "Ce que le service conserve sur vous est décrit dans la {privacy}.",
        "terms_law": "Ces conditions sont régies par le droit de {jurisdiction}.",
        "terms_contact": "Questions : {contact}.",
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
        "languages": "Idiomas",
        "the_operator": "o operador de {app}",
        "The_operator": "O operador de {app}",
        "privacy_intro": "{Operator} opera {app} em {origin}, um app que você usa pelo ChatGPT. "
                         "Esta página diz o que o app guarda sobre você, por quanto tempo e quem "
                         "mais vê. Ela é escrita a partir da própria configuração do servidor.",
        "kept_heading": "O que é guardado",
        "logs": "Cada requisição é registrada: horário, caminho, resultado e duração, o endereço "
                "de rede de onde veio, a ferramenta chamada e os identificadores que a acompanham "
                "(o da sua conta, o do app vinculado e os que o ChatGPT envia para a sua conversa "
                "e a sua organização). Os registros nunca contêm senhas nem tokens; um erro ao "
                "ler um arquivo pode citar algumas palavras dele. São guardados enquanto "
                "{operator} mantiver os registros do servidor.",
        "limits": "Seu endereço de rede, ou sua conta quando você está logado, é contado para "
                  "limitar a frequência de uso das ferramentas e do login; cada contagem é "
                  "esquecida ao fim da sua janela de tempo.",
        "shared_heading": "Quem mais vê",
        "shared_chatgpt": "O que as ferramentas respondem (suas receitas salvas, o conteúdo de um "
                          "arquivo, seu perfil) volta para o ChatGPT, onde vale a política de "
                          "privacidade da OpenAI.",
        "shared_storage": "O que é guardado fica no banco de dados e no armazenamento de arquivos "
                          "deste servidor, que {operator} opera ou aluga. Nada é vendido.",
        "shared_fetch": "O servidor baixa os arquivos que você compartilha do endereço que o "
                        "ChatGPT lhe dá, e faz seu login pelo provedor que você escolher, se "
                        "houver.",
        "shared_traces": "Os rastros de cada requisição (seus tempos, seu endereço de rede e a "
                         "conta em nome da qual ela age) são enviados ao serviço de monitoramento "
                         "que {operator} usa.",
        "rights_heading": "Suas opções",
        "rights": "Para ver, corrigir ou apagar o que é guardado sobre você, inclusive sua conta, "
                  "escreva para {contact}.",
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
        "languages": "语言",
        "the_operator": "{app} 的运营方",
        "The_operator": "{app} 的运营方",
        "privacy_intro": "{Operator} 在 {origin} 运营 {app}，这是你在 ChatGPT 中使用的应用。本页说"
                         "明该应用保存了你的哪些信息、保存多久，以及还有谁能看到。本页根据服务器自"
                         "身的配置生成。",
        "kept_heading": "保存的内容",
        "logs": "每个请求都会记录：时间、路径、结果和耗时、来源网络地址、调用的工具，以及随之而来"
                "的标识符（你的账户标识、所关联应用的标识，以及 ChatGPT 为你的对话和组织发送的标识"
                "）。日志从不包含密码或令牌；读取文件出错时可能引用其中的几个词。日志的保存期限与 "
                "{operator} 保存服务器日志的期限相同。",
        "limits": "系统按你的网络地址（登录后按你的账户）计数，以限制工具和登录的使用频率；每个计"
                  "数在其时间窗口结束后即被遗忘。",
        "shared_heading": "还有谁能看到",
        "shared_chatgpt": "工具的回答（你保存的食谱、文件的内容、你的个人资料）会返回给 "
                          "ChatGPT，并适用 OpenAI 自己的隐私政策。",
        "shared_storage": "保存的内容存放在本服务器的数据库和文件存储中，由 {operator} "
                          "运营或租用。不会出售任何数据。",
        "shared_fetch": "服务器会从 ChatGPT 提供的地址下载你分享的文件，并通过你选择的登录服务商（"
                        "如有）为你登录。",
        "shared_traces": "每个请求的追踪数据（耗时、你的网络地址以及它所代表的账户）会发送给 "
                         "{operator} 使用的监控服务。",
        "rights_heading": "你的选择",
        "rights": "如需查看、更正或删除保存的有关你的信息（包括你的账户），请联系 {contact}。",
        "no_contact": "本服务器的运营方",
        "terms_intro": "本条款适用于你对 {origin} 上由 {operator} 运营的 {app} 的使用。",
        "terms_service": "本服务按现状提供，不作任何保证。{Operator} 可随时更改或停止本服务。",
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

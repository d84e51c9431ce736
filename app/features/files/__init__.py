"""Files ChatGPT hands over (``openai/fileParams``): ``analyze_file``, ``compare_files``, and a per-account library
(``list_files``, ``delete_file``). Bytes live in app.storage; ``python -m app files sweep`` expires anonymous
uploads and removes orphan objects."""

from collections.abc import Iterator

from app.auth.scopes import Scope
from app.db import UnitOfWork
from app.feature import Deps, Feature
from app.features.files.repository import FileRepository
from app.features.files.samples import routes
from app.features.files.settings import FilesSettings
from app.features.files.tool import READ_SCOPE, WRITE_SCOPE, register
from app.observability.metrics import Reading


async def sweep(deps: Deps) -> str:
    from app.features.files.usecases import FileUseCases

    return await FileUseCases.of(deps).sweep()


def gauges(uow: UnitOfWork) -> Iterator[Reading]:
    rows, stored = uow.repository(FileRepository).totals()
    for kind in ("upload", "report"):
        yield Reading("app_stored_files", "Files kept (uploads and their reports), expired ones "
                                          "until swept.",
                      rows.get(kind, 0), {"kind": kind})
    yield Reading("app_stored_bytes", "Bytes at rest in storage (each content-addressed object "
                                      "once).", stored)


def forget(uow: UnitOfWork, subject: str, deps: Deps) -> int:
    """An account deleted: its library goes with it."""
    from app.features.files.service import forget_owner

    return forget_owner(uow, subject, documents=deps.documents)


def privacy(deps: Deps) -> list[dict[str, str]]:
    """How long the files people share are kept, from APP_FILES_ANON_TTL."""
    from app.directory.catalog import duration

    ttl = deps.part(FilesSettings).anon_ttl
    return [{
        "en": "The files you share with its tools, and what it finds in them: if you let the app "
              "keep files in your library, they stay there until you delete them; otherwise they "
              f"are deleted {duration('en', ttl)} after you share them, or shortly after.",
        "es": "Los archivos que compartes con sus herramientas, y lo que encuentra en ellos: si "
              "dejas que la app guarde archivos en tu biblioteca, quedan allí hasta que los "
              f"eliminas; si no, se borran {duration('es', ttl)} después de que los compartes, o "
              "poco después.",
        "fr": "Les fichiers que vous partagez avec ses outils, et ce qu’il y trouve : si vous "
              "laissez l’app conserver des fichiers dans votre bibliothèque, ils y restent "
              f"jusqu’à ce que vous les supprimiez ; sinon, ils sont effacés {duration('fr', ttl)} "
              "après que vous les avez partagés, ou peu après.",
        "pt": "Os arquivos que você compartilha com as ferramentas, e o que elas encontram neles: "
              "se você deixar o app guardar arquivos na sua biblioteca, eles ficam lá até você "
              f"excluí-los; caso contrário, são apagados {duration('pt', ttl)} depois que você os "
              "compartilha, ou pouco depois.",
        "zh": "你通过其工具分享的文件及其分析结果：如果你允许应用将文件保存到你的资料库，它们会一"
              f"直保存，直到你将其删除；否则，会在你分享后{duration('zh', ttl)}（或稍后）删除。",
    }]


FEATURE = Feature(
    name="files",
    instructions="Use `analyze_file` when the user shares a file and wants to know what is in it, "
    "`compare_files` for several tables at once, and `list_files` / `delete_file` for the files "
    "they kept.",
    tools=register,
    routes=routes,
    commands={"sweep": sweep},
    gauges=gauges,
    privacy=privacy,
    forget=forget,
    settings=FilesSettings,
    scopes=(
        Scope(READ_SCOPE, {
            "en": "See the files in your library",
            "es": "Ver los archivos de tu biblioteca",
            "fr": "Voir les fichiers de votre bibliothèque",
            "pt": "Ver os arquivos da sua biblioteca",
            "zh": "查看你资料库中的文件",
        }),
        Scope(WRITE_SCOPE, {
            "en": "Keep the files you share in your library, and delete them",
            "es": "Guardar en tu biblioteca los archivos que compartes, y eliminarlos",
            "fr": "Conserver dans votre bibliothèque les fichiers que vous partagez, et les "
                  "supprimer",
            "pt": "Guardar na sua biblioteca os arquivos que você compartilha, e excluí-los",
            "zh": "将你分享的文件保存到资料库，并可删除",
        }, implies=(READ_SCOPE,)),
    ),
)

"""The removal steps docs/forking.md prints, read from its ```bash blocks: tests/e2e/test_fork.py
runs exactly what a forker is told to run, so the page and the test cannot drift apart.

Each removal section prints its deletions in its first block (the demo section's starts with
``demo=zoo``: the name to substitute), then the steps every removal ends with (rebuild the widgets,
write the migration, migrate, test) in the blocks after it. The deletions run as printed; the steps
after them are the ones ``FINISH`` names, which test_fork.py performs one by one
(tests/unit/test_forking_doc.py holds the page to it).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

FORKING = Path("docs") / "forking.md"
DEMO_SECTION = "Remove a demo feature"
AUTHSERVER_SECTION = "Bring your own identity provider"
TUNING_SECTION = "Run on stock parts only"
# What each section asks for after its deletions, as the shell splits it. An export is compared by
# the names it sets (the page's IdP is an example; the fork's is tests.demos.EXTERNAL_IDP).
FINISH = {
    DEMO_SECTION: [["./dev", "widgets"], ["./dev", "revision", "drop $demo"],
                   ["./dev", "migrate"], ["./dev", "test"]],
    AUTHSERVER_SECTION: [["export", "APP_AUTH_MODE", "APP_OAUTH_ISSUER", "APP_OAUTH_JWKS_URL"],
                         ["./dev", "revision", "drop the authorization server"],
                         ["./dev", "migrate"], ["./dev", "test"]],
    TUNING_SECTION: [["./dev", "test"]],
}
DEMO_LINE = re.compile(r"\Ademo=zoo\b.*$", re.MULTILINE)


def section(root: Path, title: str) -> str:
    """The text under the ``## `` heading that starts with ``title``, up to the next one."""
    text = (root / FORKING).read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.MULTILINE)
    (found,) = [part for part in parts if part.startswith(title)]
    return found


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def deletions(root: Path, title: str) -> str:
    """The section's first block: the deletions, as printed."""
    return bash_blocks(section(root, title))[0]


def for_demo(script: str, name: str) -> str:
    """The demo section's deletions for ``name``: its first line, ``demo=zoo``, names that demo."""
    if not DEMO_LINE.search(script):
        raise ValueError(f"the demo section's first block must start with demo=zoo:\n{script}")
    return DEMO_LINE.sub(f"demo={name}", script, count=1)


def finish(root: Path, title: str) -> list[list[str]]:
    """The steps after the deletions: each command line of the later blocks, as the shell splits it
    (comments left out); an ``export`` as the names it sets."""
    steps = []
    for block in bash_blocks(section(root, title))[1:]:
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "export":
                words = ["export", *(word.split("=", 1)[0] for word in words[1:])]
            if words:
                steps.append(words)
    return steps

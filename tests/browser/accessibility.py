"""The accessibility harness: axe-core (pinned in tools/conformance/package.json, installed by
./dev test) run in the page as a person would meet it. Reused by every browser test of a page or
widget: ``violations(page)`` lists axe's violations of WCAG 2.1 A and AA, of any impact (minor
included), one line each."""

from __future__ import annotations

from typing import Any

from tests.conftest import ROOT

AXE = ROOT / "tools" / "conformance" / "node_modules" / "axe-core" / "axe.min.js"
# WCAG 2.1 A and AA: what an app directory's review and most accessibility laws ask for.
STANDARDS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def violations(page: Any) -> list[str]:
    """axe's violations of any impact on ``page`` as it stands, one line each
    (the rule, what it asks, the first elements). The page's context must bypass its CSP, which
    forbids the injected script (browser.new_context(bypass_csp=True))."""
    assert AXE.is_file(), f"{AXE} is missing: ./dev test installs tools/conformance's npm packages"
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("(values) => axe.run(document, {runOnly: {type: 'tag', values}})",
                           STANDARDS)
    return [f"{v['id']} ({v['impact']}): {v['help']}: {[n['target'] for n in v['nodes']][:3]}"
            for v in result["violations"]]

"""docs/forking.md prints its removal steps in the shape tests/e2e/test_fork.py runs them from
(tests/forking_doc.py): a change to a step shows here at once, before the fork test's minutes."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import ROOT
from tests.forking_doc import DEMO_SECTION, FINISH, deletions, finish, for_demo


@pytest.mark.parametrize("title", sorted(FINISH))
def test_each_removal_prints_a_deletion_script_then_only_steps_the_fork_test_performs(title):
    script = deletions(ROOT, title)
    syntax = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True,
                            timeout=10)
    assert syntax.returncode == 0, syntax.stderr
    assert "./dev" not in script  # the steps after the deletions are the next blocks' (FINISH)
    assert finish(ROOT, title) == FINISH[title]


def test_the_demo_deletions_name_the_demo_once_and_the_fork_test_substitutes_it():
    script = for_demo(deletions(ROOT, DEMO_SECTION), "files")
    assert script.splitlines()[0].split("#")[0].strip() == "demo=files"
    assert "zoo" not in script.split("\n", 1)[1]  # every later line says $demo
    with pytest.raises(ValueError, match="must start with demo=zoo"):
        for_demo("git rm -r app/features/zoo\n", "files")

"""The app as the ChatGPT directory lists it, and ``python -m app listing``.

``app.toml`` (beside this file) holds the app-level fields: display name, descriptions, logo,
links. Each feature folder may hold a ``listing.toml`` with its starter prompts and test cases,
so deleting a feature deletes them and ``new-feature`` writes one. ``python -m app listing``
reads both (``entries``), checks them against the tools a server lists (``review``), replays
every test case as a real tool call against that server and prints a report, and writes the
plugin a submission uploads (``plugin``): its manifest, ``.mcp.json`` and onboarding skill.
docs/submission.md walks through it.
"""

"""The host emulator's file library: bounded, newest first kept."""

from __future__ import annotations

from app.http.devhost import DevFiles


def test_the_dev_file_library_keeps_the_newest_files_within_its_bounds():
    library = DevFiles(max_bytes=10, max_files=3)
    ids = [library.add(b"12345", "text/plain", f"f{i}.txt") for i in range(3)]
    assert library.get(ids[0]) is None  # 15 bytes > 10: the oldest went first
    assert library.get(ids[2]) == (b"12345", "text/plain", "f2.txt")
    more = [library.add(b"1", "text/plain", "g.txt") for _ in range(4)]
    assert [library.get(i) is not None for i in more] == [False, True, True, True]


def test_recent_events_keep_a_json_copy_of_what_was_logged():
    from app.logging import RecentEvents

    recent = RecentEvents(capacity=2)
    data = {"nested": {"when": object()}}
    recent(None, "info", {"event": "widget.event", "widget_session_id": "ws", "data": data})
    data["nested"]["later"] = "changed"
    recent(None, "info", {"event": "other"})  # no widget session: not kept
    (entry,) = recent.for_widget_session("ws")
    assert entry["data"]["nested"] == {"when": entry["data"]["nested"]["when"]}
    assert entry["data"]["nested"]["when"].startswith("<object object")
    assert entry["seq"] == 1

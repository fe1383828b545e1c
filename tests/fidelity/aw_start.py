"""AndroidWorld's start state, rebuilt from the writes its `initialize_task` issued, against SimDroid's.

`aw_device.World` records every request of AndroidWorld's setup that would change the device. Replayed on a
factory-fresh SimDroid device, the ones this module understands give what AndroidWorld's setup leaves on the
device: the files of shared storage (`echo ... >`, pushes, `rm`, `find ... -delete`), the incoming and sent
SMS, the contacts, the clipboard, the settings SimDroid models, and the rows its setup inserts into the apps'
databases. `compare_start` sets that beside SimDroid's own start state, part by part.

Database rows: AndroidWorld's setup pulls a database, changes it and pushes it back; on the fake device every
pull gives SimDroid's database, so a push after an insert holds SimDroid's rows plus the inserted batch, and a
push after a clear holds none. The rows AndroidWorld's setup leaves in a table are the batches pushed after
its last clear; they are compared with SimDroid's rows as multisets, leaving out columns the database assigns
(ids) or AndroidWorld draws afresh for every row (uuids).
"""

from __future__ import annotations

import collections
import dataclasses
import re
from typing import Any

from tests.fidelity.aw_device import SDCARD, Write, canonical, read_tables

FILLER = re.compile(r"[A-Za-z0-9]{20}\n?")  # create_file's random content when it is given none


@dataclasses.dataclass
class AwStart:
    files: dict[str, str | None]  # path -> text (None: binary content)
    inbox: list[tuple[str, str]]
    sent: list[tuple[str, str]]
    contacts: set[tuple[str, str]]
    clipboard: str | None
    settings: dict[str, str]
    unread: list[str]  # writes touching shared storage that were not understood
    tables: dict[tuple[str, str], list[dict[str, Any]]] = dataclasses.field(default_factory=dict)


def _digits(s: str) -> str:
    return re.sub(r"\D", "", s or "")


def _text(data: bytes) -> str | None:
    """A pushed file's content as text, or None for binary content (pictures, audio, video)."""
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return None
    return None if "\0" in text else text


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s)


def _key(row: dict[str, Any]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in row.items() if not _assigned(k)))


def _assigned(column: str) -> bool:
    """Columns the database or AndroidWorld's row constructor fill in for every row: ids and uuids."""
    c = column.lower()
    return c in ("id", "_id", "uuid", "remoteid") or c.endswith(("_id", "id"))


# Tables compared row for row. Not compared: Joplin's folders (AndroidWorld's setup adds only the folders it
# does not find, so on the fake device it adds few), notes_normalized (Joplin's search index, which SimDroid
# does not keep) and VLC's Media (the app's own scan of the videos fills it).
COMPARED_TABLES = (
    "expense",
    "recipes",
    "events",
    "map_markers",
    "tasks",
    "tracks",
    "notes",
    "PlaylistEntity",
    "SongEntity",
    "playing_queue",
    "Playlist",
    "PlaylistMediaRelation",
)


def _inserted(pushed: list[dict[str, Any]], pulled: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of `pushed` beyond those of `pulled` (multisets, assigned columns left out)."""
    left = collections.Counter(_key(r) for r in pulled)
    out = []
    for r in pushed:
        k = _key(r)
        if left[k]:
            left[k] -= 1
        else:
            out.append(r)
    return out


def replay(factory: Any, writes: list[Write], databases: dict[str, bytes] | None = None) -> AwStart:
    """AndroidWorld's start state: `writes` applied to a factory-fresh device (`factory`, a DeviceState).
    `databases` are the database files the fake device served during the setup (SimDroid's, by path)."""
    files: dict[str, str | None] = {p: e.content for p, e in factory.files.items()}
    st = AwStart(files, [], [], set(), None, {}, [])

    def remove_under(path: str, self_too: bool) -> None:
        p = canonical(path)
        for f in [f for f in files if f.startswith(p + "/") or (self_too and f == p)]:
            del files[f]

    for w in writes:
        a = w.args
        if w.kind == "push" and databases and a[0] in databases:
            pulled = read_tables(databases[a[0]])
            for table, rows in read_tables(a[1]).items():
                batch = _inserted(rows, pulled.get(table, []))
                if not rows:  # a clear
                    st.tables[(a[0], table)] = []
                elif batch:
                    st.tables.setdefault((a[0], table), []).extend(batch)
        elif w.kind == "push" and canonical(a[0]).startswith(SDCARD + "/"):
            files[canonical(a[0])] = _text(a[1])
        elif w.kind == "emu" and list(a[:2]) == ["sms", "send"]:
            st.inbox.append((a[2], a[3]))
        elif w.kind == "sms_send":
            st.sent.append((a[0], a[1]))
        elif w.kind == "contact":
            st.contacts.add((a[0], _digits(a[1])))
        elif w.kind == "clipboard":
            st.clipboard = _unescape(a or "")
        elif w.kind == "settings":
            st.settings[a[0]] = a[1]
        elif w.kind == "shell":
            s = a
            if m := re.fullmatch(r"echo '(.*)' > (.+)", s, re.S):
                files[canonical(m.group(2))] = m.group(1).replace("'\"'\"'", "'") + "\n"
            elif m := re.fullmatch(r"find (\S+) -mindepth 1 -type f -delete", s):
                remove_under(m.group(1), self_too=False)
            elif m := re.fullmatch(r"rm -r[f]? (\S+)/\*", s):
                remove_under(m.group(1), self_too=False)
            elif m := re.fullmatch(r"rm -r[f]? (\S+)", s):
                remove_under(m.group(1), self_too=True)
            elif "mmssms.db" in s and "DELETE FROM sms" in s:
                st.inbox.clear()
                st.sent.clear()
            elif s == "pm clear com.android.providers.contacts" or "content://com.android.contacts" in s:
                st.contacts.clear()
            elif m := re.fullmatch(r"settings put (?:system|global|secure) (\S+) (\S+)", s):
                st.settings[m.group(1)] = m.group(2)
            elif m := re.fullmatch(r"svc (wifi|bluetooth) (enable|disable)", s):
                st.settings[f"{m.group(1)}_on"] = "1" if m.group(2) == "enable" else "0"
            elif SDCARD in s or "/sdcard" in s or "/data/media/0" in s:
                if not re.match(
                    r"(mkdir|chmod|ls|find \S+ -type|cat|am broadcast|content delete --uri "
                    r"content://media)",
                    s,
                ):
                    st.unread.append(s)
    return st


@dataclasses.dataclass
class StartComparison:
    """Per part: None when it agrees, else a short description of the difference; per compared table: AW's
    rows found in SimDroid's, AW's rows, SimDroid's rows."""

    parts: dict[str, str | None]
    rows: dict[str, tuple[int, int, int]] = dataclasses.field(default_factory=dict)

    @property
    def differences(self) -> dict[str, str]:
        return {k: v for k, v in self.parts.items() if v is not None}


SETTINGS = ("wifi_on", "bluetooth_on", "screen_brightness", "airplane_mode_on")


def compare_start(aw: AwStart, dev: Any, databases: dict[str, bytes] | None = None) -> StartComparison:
    """AndroidWorld's start state (`replay`) against SimDroid's device `dev` after its `initialize`
    (`databases`: SimDroid's database files at the start, by path)."""
    parts: dict[str, str | None] = {}
    found: dict[str, tuple[int, int, int]] = {}
    for (path, table), rows in sorted(aw.tables.items()):
        if table not in COMPARED_TABLES:
            continue
        sim = read_tables(databases[path]).get(table, []) if databases else []
        missing, extra = _inserted(rows, sim), _inserted(sim, rows)
        found[table] = (len(rows) - len(missing), len(rows), len(sim))
        parts[f"{table} rows"] = (
            None
            if not missing and not extra
            else (f"{len(rows) - len(missing)} of AW's {len(rows)} rows in SimDroid's {len(sim)}")
        )
    sim_files = {p: e.content for p, e in dev.files.items()}
    only_aw = sorted(set(aw.files) - set(sim_files))
    only_sim = sorted(set(sim_files) - set(aw.files))
    if only_aw or only_sim:
        parts["file names"] = (
            f"{len(only_aw)} of AW's files not in SimDroid's, {len(only_sim)} of SimDroid's not "
            f"in AW's (e.g. {(only_aw or only_sim)[0].replace(SDCARD + '/', '')})"
        )
    else:
        parts["file names"] = None
    texts = [
        p
        for p in set(aw.files) & set(sim_files)
        if aw.files[p] is not None and not FILLER.fullmatch(aw.files[p] or "")
    ]
    bad = sorted(p for p in texts if aw.files[p] != sim_files[p])
    parts["file texts"] = (
        f"{len(bad)} of {len(texts)} differ (e.g. {bad[0].replace(SDCARD + '/', '')})" if bad else None
    )
    by_time = sorted(((i, m) for i, m in enumerate(dev.sms)), key=lambda im: (im[1]["time_ms"], im[0]))
    for box, want in (("inbox", aw.inbox), ("sent", aw.sent)):
        got = [(_digits(m["address"]), m["body"]) for _, m in by_time if m["box"] == box]
        want_d = [(_digits(n), b) for n, b in want]
        if got == want_d:
            parts[f"SMS {box}"] = None
        elif len(got) != len(want_d):
            parts[f"SMS {box}"] = f"{len(want_d)} messages in AW's, {len(got)} in SimDroid's"
        else:
            n = sum(g != w for g, w in zip(got, want_d, strict=True))
            parts[f"SMS {box}"] = f"{n} of {len(got)} messages differ"
    sim_contacts = {(c["name"], _digits(c["phone"])) for c in dev.contacts}
    parts["contacts"] = (
        None
        if sim_contacts == aw.contacts
        else (f"AW's {sorted(aw.contacts)[:2]}, SimDroid's {sorted(sim_contacts)[:2]}")
    )
    if aw.clipboard is not None:
        parts["clipboard"] = (
            None
            if aw.clipboard == dev.clipboard
            else (f"AW's {aw.clipboard[:30]!r}, SimDroid's {dev.clipboard[:30]!r}")
        )
    for key in SETTINGS:
        if key in aw.settings:
            sim = str(dev.settings.get(key))
            parts[f"setting {key}"] = (
                None if sim == aw.settings[key] else f"AW {aw.settings[key]}, SimDroid {sim}"
            )
    if aw.unread:
        parts["not replayed"] = f"{len(aw.unread)} storage writes not understood (e.g. {aw.unread[0][:60]})"
    return StartComparison(parts, found)

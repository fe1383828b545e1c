"""The fidelity harness's own logic that needs no android_world: AndroidWorld's setup writes replayed into a
start state, and that start state compared with SimDroid's (fast; runs in CI)."""

from tests.fidelity.aw_device import SDCARD, Write, canonical
from tests.fidelity.aw_start import compare_start, replay
from voyager_gym.backends.sim.device import DeviceState


def test_paths_are_canonical():
    assert canonical("/sdcard/Download/a.txt") == f"{SDCARD}/Download/a.txt"
    assert canonical("/data/media/0/Android/data/x") == f"{SDCARD}/Android/data/x"
    assert canonical("/storage/emulated/0/") == SDCARD


def test_replay_follows_androidworlds_setup_writes():
    factory = DeviceState()
    factory.write_file(f"{SDCARD}/Music/old.mp3", "x")
    writes = [
        Write("shell", f"find {SDCARD}/ -mindepth 1 -type f -delete"),
        Write("shell", f"echo 'it'\"'\"'s here' > {SDCARD}/Documents/Markor/a.md"),
        Write("push", ("/sdcard/DCIM/b.jpg", b"\xff\xd8\x00binary")),
        Write("emu", ["sms", "send", "+15550001111", "hello there"]),
        Write("contact", ("Ada Lovelace", "+1 555-000-2222")),
        Write("clipboard", r"Order\ No:\ A1"),
        Write("shell", "svc wifi disable"),
    ]
    aw = replay(factory, writes)
    assert aw.files == {f"{SDCARD}/Documents/Markor/a.md": "it's here\n", f"{SDCARD}/DCIM/b.jpg": None}
    assert aw.inbox == [("+15550001111", "hello there")]
    assert aw.contacts == {("Ada Lovelace", "15550002222")}
    assert aw.clipboard == "Order No: A1" and aw.settings == {"wifi_on": "0"}

    dev = DeviceState()
    dev.write_file(f"{SDCARD}/Documents/Markor/a.md", "it's here\n")
    dev.write_file(f"{SDCARD}/DCIM/b.jpg", "picture")
    dev.sms.append({"address": "+15550001111", "body": "hello there", "time_ms": 1, "box": "inbox"})
    dev.contacts.append({"name": "Ada Lovelace", "phone": "+15550002222"})
    dev.clipboard = "Order No: A1"
    dev.settings["wifi_on"] = 0
    assert compare_start(aw, dev).differences == {}

    dev.sms[0]["body"] = "hello"
    dev.files[f"{SDCARD}/Documents/Markor/a.md"].content = "changed"
    diff = compare_start(aw, dev).differences
    assert set(diff) == {"SMS inbox", "file texts"}

"""Files tasks: delete a file and move a file between the standard folders of the sdcard.

As in AndroidWorld, storage is cleared of files first, the target is created with noise files whose names vary
the folder's usual file names, and the verifier checks only existence: `folder/name` must be gone (delete), or
gone from the source and present in the destination (move). The per-folder file names are SimDroid's own.
"""

from __future__ import annotations

import posixpath
import random
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.files import DEVICE_ROOT
from voyager_gym.backends.sim.apps.files import PKG as FILES
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    back,
    click,
    done,
    long_press,
    open_app,
    register_task,
    scroll_to_find,
)
from voyager_gym.backends.sim.tasks.markor import (
    clear_storage,
    create_file,
    exists_under,
    noise_names,
    random_file_name,
)

# The standard folders of the sdcard and typical file names in each.
FOLDER_FILES: dict[str, tuple[str, ...]] = {
    "Alarms": ("sunrise_chime.mp3", "gentle_wakeup.mp3", "school_day.mp3", "nap_timer.mp3", "loud_bell.mp3",
               "weekday_alarm.mp3", "soft_piano.mp3", "rooster_call.mp3"),
    "Audiobooks": ("space_opera_part1.mp3", "ancient_rome_lecture.mp3", "detective_story.mp3",
                   "poetry_collection.mp3", "cooking_memoir.mp3", "habit_building.mp3", "sea_voyage.mp3",
                   "spanish_basics.mp3"),
    "DCIM": ("camping_trip.jpg", "graduation_day.jpg", "new_puppy.jpg", "city_skyline.jpg",
             "family_dinner.jpg", "first_snow.jpg", "lake_sunset.jpg", "concert_night.jpg"),
    "Documents": ("tax_return_2022.pdf", "lease_agreement.pdf", "course_syllabus.pdf", "travel_insurance.pdf",
                  "warranty_card.pdf", "project_proposal.pdf", "meeting_agenda.pdf", "bank_statement.pdf"),
    "Download": ("installer_v2.apk", "user_manual.pdf", "photos_backup.zip", "wallpaper_hd.png",
                 "podcast_episode.mp3", "conference_slides.pdf", "trailer_clip.mp4", "dataset_sample.zip"),
    "Movies": ("space_adventure.mp4", "family_comedy.mp4", "nature_documentary.mp4", "haunted_house.mp4",
               "heist_thriller.mp4", "cartoon_marathon.mp4", "period_drama.mp4", "road_movie.mp4"),
    "Music": ("summer_hits.mp3", "blues_session.mp3", "string_quartet.mp3", "indie_single.mp3",
              "synthwave_mix.mp3", "country_road.mp3", "lofi_beats.mp3", "choir_live.mp3"),
    "Notifications": ("ding.mp3", "message_pop.mp3", "calendar_chime.mp3", "low_battery.mp3",
                      "mail_arrived.mp3", "reminder_tick.mp3", "soft_ping.mp3", "update_ready.mp3"),
    "Pictures": ("portrait_mode.jpg", "autumn_leaves.jpg", "beach_walk.jpg", "night_market.jpg",
                 "birthday_cake.jpg", "cat_nap.jpg", "flower_macro.jpg", "street_food.jpg"),
    "Podcasts": ("morning_news.mp3", "startup_stories.mp3", "stand_up_hour.mp3", "sleep_science.mp3",
                 "history_bites.mp3", "album_reviews.mp3", "election_debate.mp3", "backpacking_tips.mp3"),
    "Recordings": ("job_interview.mp3", "guest_lecture.mp3", "voice_memo.mp3", "standup_meeting.mp3",
                   "idea_dump.mp3", "bedtime_story.mp3", "band_rehearsal.mp3", "phone_call_notes.mp3"),
    "Ringtones": ("classic_ring.mp3", "marimba_loop.mp3", "old_phone.mp3", "retro_beep.mp3",
                  "guitar_riff.mp3", "bird_song.mp3", "harp_glissando.mp3", "techno_ring.mp3"),
}
FOLDERS = tuple(sorted(FOLDER_FILES))


def _add_noise(dev: DeviceState, rng: random.Random, base: str, folder: str) -> None:
    for name in noise_names(rng, base, FOLDER_FILES[folder]):
        path = f"{SDCARD}/{folder}/{name}"
        if not dev.exists(path):
            create_file(dev, path, "", rng)


# -- expert -------------------------------------------------------------------------------------------------
def files_expert(view: View, mem: dict[str, Any], folder: str, name: str, dest: str | None = None) -> Action:
    """Drawer -> storage root -> folder -> long-press the file -> Delete/OK, or Move to… -> dest -> Move."""
    if mem.get("finished"):
        return done()
    if view.app != FILES:
        return open_app("Files")
    if view.has(rid="android:id/message") and view.has(text="OK", rid="android:id/button1"):
        mem["finished"] = True
        return click(view.find(text="OK", rid="android:id/button1"))
    if view.has(text="Move to…"):
        return click(view.find(text="Move to…"))
    title = view.title or ""
    if view.has(text="Move", rid="android:id/button1"):  # the destination picker
        if title == dest:
            mem["finished"] = True
            return click(view.find(text="Move", rid="android:id/button1"))
        if title == DEVICE_ROOT:
            found = scroll_to_find(view, mem, "dest", text=dest, rid="android:id/title")
            return click(found) if isinstance(found, int) else found
        return back()
    if view.has(desc="Show roots") is False and title.endswith(" selected"):
        if title == "1 selected":
            return click(view.find(desc="More options" if dest else "Delete"))
        return click(view.find(desc="Clear selection"))
    drawer_root = view.find(text=DEVICE_ROOT, rid="android:id/title")
    if drawer_root is not None:
        return click(drawer_root)
    if title == folder and view.has(rid=f"{FILES}:id/breadcrumb_text"):
        found = scroll_to_find(view, mem, "file", text=name, rid="android:id/title")
        return long_press(found) if isinstance(found, int) else found
    if title == DEVICE_ROOT:
        found = scroll_to_find(view, mem, "folder", text=folder, rid="android:id/title")
        return click(found) if isinstance(found, int) else found
    i = view.find(desc="Show roots")
    return click(i) if i is not None else back()


@register_task
class FilesDeleteFile(SimTask):
    name = "FilesDeleteFile"
    app_names = ("files",)
    complexity = 2.2
    template = ("Delete the file {file_name} from the Android filesystem located in the {subfolder} folder "
                "within the sdk_gphone_x86_64 storage area.")

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        subfolder = rng.choice(FOLDERS)
        ext = posixpath.splitext(FOLDER_FILES[subfolder][0])[1]
        return {"file_name": random_file_name(rng) + ext, "subfolder": subfolder}

    def initialize(self, dev: DeviceState) -> None:
        clear_storage(dev)
        p = self.params
        rng = self.rng("files")
        create_file(dev, f"{SDCARD}/{p['subfolder']}/{p['file_name']}", "", rng)
        _add_noise(dev, rng, p["file_name"], p["subfolder"])

    def is_successful(self, dev: DeviceState) -> float:
        p = self.params
        return 0.0 if exists_under(dev, f"{SDCARD}/{p['subfolder']}", p["file_name"]) else 1.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        return files_expert(view, mem, self.params["subfolder"], self.params["file_name"])


@register_task
class FilesMoveFile(SimTask):
    name = "FilesMoveFile"
    app_names = ("files",)
    complexity = 2.0
    template = ("Move the file {file_name} from {source_folder} within the sdk_gphone_x86_64 storage area to "
                "the {destination_folder} within the same sdk_gphone_x86_64 storage area in the Android "
                "filesystem.")

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        src = rng.choice(FOLDERS)
        dst = rng.choice([f for f in FOLDERS if f != src])
        # AndroidWorld names the file after one of the *destination* folder's usual files.
        return {"file_name": rng.choice(FOLDER_FILES[dst]), "source_folder": src, "destination_folder": dst}

    def initialize(self, dev: DeviceState) -> None:
        clear_storage(dev)
        p = self.params
        rng = self.rng("files")
        src = f"{SDCARD}/{p['source_folder']}"
        _add_noise(dev, rng, p["file_name"], p["source_folder"])
        create_file(dev, f"{src}/{p['file_name']}", "", rng)
        dev.mkdir(f"{SDCARD}/{p['destination_folder']}")

    def is_successful(self, dev: DeviceState) -> float:
        p = self.params
        src = exists_under(dev, f"{SDCARD}/{p['source_folder']}", p["file_name"])
        dst = exists_under(dev, f"{SDCARD}/{p['destination_folder']}", p["file_name"])
        return 1.0 if dst and not src else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        p = self.params
        return files_expert(view, mem, p["source_folder"], p["file_name"], p["destination_folder"])
